"""The builtin editor: same size out, repeatable, cancellable, each intent measurably applied."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

from pipelines.base import Cancelled, EditInput, GenerateInput
from pipelines.builtin.edit import BuiltinEdit
from pipelines.builtin.edit.instructions import plan_edit
from pipelines.builtin.generate import BuiltinGenerate
from tests.support.control import RecordingControl


@pytest.fixture(scope="module")
def source() -> Image.Image:
    """A painted landscape with sky, ridges, a sun and grain: something to edit."""
    inputs = GenerateInput(prompt="golden hour over forest hills", width=160, height=120, seed=7)
    return BuiltinGenerate().run(inputs, RecordingControl()).images[0]


def edit(source: Image.Image, prompt: str, references: tuple[Image.Image, ...] = ()) -> Image.Image:
    inputs = EditInput(prompt=prompt, source=source, seed=3, references=references)
    output = BuiltinEdit().run(inputs, RecordingControl())
    assert len(output.images) == 1
    return output.images[0]


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float32)


def red_minus_blue(image: Image.Image) -> float:
    values = pixels(image)
    return float((values[..., 0] - values[..., 2]).mean())


def laplacian_variance(image: Image.Image) -> float:
    grey = cv2.cvtColor(np.asarray(image.convert("RGB")), cv2.COLOR_RGB2GRAY)
    return float(cv2.Laplacian(grey.astype(np.float32), cv2.CV_32F).var())


def palette_distance(first: Image.Image, second: Image.Image) -> float:
    """How far apart two pictures' average colours are (0-255 per channel)."""
    return float(np.abs(pixels(first).mean(axis=(0, 1)) - pixels(second).mean(axis=(0, 1))).max())


def test_output_has_the_source_size_and_mode(source: Image.Image) -> None:
    wide = source.resize((1360, 768))
    for prompt in ("make it warmer", "add grain", "blur the background"):
        image = edit(wide, prompt)
        assert image.mode == "RGB"
        assert image.size == (1360, 768)
    assert edit(source.convert("RGBA"), "black and white").size == source.size


def test_same_inputs_give_identical_bytes(source: Image.Image) -> None:
    prompt = "make it vintage and add grain, in the style of van gogh"
    assert edit(source, prompt).tobytes() == edit(source, prompt).tobytes()


def test_warmer_and_cooler_move_red_against_blue(source: Image.Image) -> None:
    before = red_minus_blue(source)
    assert red_minus_blue(edit(source, "make it warmer")) > before + 10
    assert red_minus_blue(edit(source, "make it cooler")) < before - 10
    assert red_minus_blue(edit(source, "make it much warmer")) > red_minus_blue(
        edit(source, "make it slightly warmer")
    )
    assert red_minus_blue(edit(source, "make it less warm")) < before


def test_brighter_and_darker_move_the_mean(source: Image.Image) -> None:
    before = pixels(source).mean()
    assert pixels(edit(source, "brighter please")).mean() > before + 8
    assert pixels(edit(source, "make it darker")).mean() < before - 8


def test_black_and_white_has_equal_channels(source: Image.Image) -> None:
    for prompt in ("make it black and white", "black and white with film grain"):
        values = np.asarray(edit(source, prompt))
        assert np.array_equal(values[..., 0], values[..., 1])
        assert np.array_equal(values[..., 1], values[..., 2])


def test_blurring_the_background_lowers_its_detail_and_keeps_the_foreground(
    source: Image.Image,
) -> None:
    sharp = source.resize((320, 240))
    blurred = edit(sharp, "blur the background")
    sky, ground = (0, 0, 320, 80), (0, 200, 320, 240)
    assert laplacian_variance(blurred.crop(sky)) < 0.5 * laplacian_variance(sharp.crop(sky))
    assert laplacian_variance(blurred) < 0.9 * laplacian_variance(sharp)
    assert laplacian_variance(blurred.crop(ground)) > 0.7 * laplacian_variance(sharp.crop(ground))


def test_grain_adds_fine_noise(source: Image.Image) -> None:
    assert laplacian_variance(edit(source, "add grain")) > 1.5 * laplacian_variance(source)


def test_colour_cast_is_removed(source: Image.Image) -> None:
    cast = Image.fromarray(np.clip(pixels(source) * [0.8, 0.95, 1.3], 0, 255).astype(np.uint8))
    spread_before = np.ptp(pixels(cast).mean(axis=(0, 1)))
    spread_after = np.ptp(pixels(edit(cast, "remove the colour cast")).mean(axis=(0, 1)))
    assert spread_after < 0.6 * spread_before


def test_a_learned_style_repaints_the_picture(source: Image.Image) -> None:
    pop = edit(source, "in the style of pop art")
    ukiyo = edit(source, "make it look like an ukiyo-e print")
    difference = np.abs(pixels(pop) - pixels(source)).mean()
    assert difference > 20
    assert palette_distance(pop, ukiyo) > 15


def test_a_reference_lends_its_look(source: Image.Image) -> None:
    red = Image.new("RGB", (64, 64), (220, 30, 30))
    blue = Image.new("RGB", (64, 64), (30, 60, 220))
    like_red = edit(source, "like this reference", references=(red,))
    like_blue = edit(source, "like this reference", references=(blue,))
    assert red_minus_blue(like_red) > red_minus_blue(like_blue) + 20


def test_notes_say_what_was_applied(source: Image.Image) -> None:
    output = BuiltinEdit().run(
        EditInput(prompt="make it warmer and add grain", source=source), RecordingControl()
    )
    assert "warmer" in output.notes[0]
    assert "film grain" in output.notes[0]


def test_an_unknown_instruction_still_changes_something_and_says_so(source: Image.Image) -> None:
    output = BuiltinEdit().run(EditInput(prompt="make it sing", source=source), RecordingControl())
    assert "no edit the builtin editor knows" in output.notes[0]
    assert np.abs(pixels(output.images[0]) - pixels(source)).mean() > 1


def test_a_reference_asked_for_but_not_sent_is_reported() -> None:
    plan = plan_edit("make it warmer, like this reference", has_references=False)
    assert [step.operation for step in plan.steps] == ["temperature"]
    assert any("no reference image" in reason for reason in plan.skipped)


def test_words_are_not_read_twice() -> None:
    plan = plan_edit("black and white", has_references=False)
    assert [step.operation for step in plan.steps] == ["monochrome"]


def test_progress_rises_within_the_edits_own_work(source: Image.Image) -> None:
    control = RecordingControl()
    BuiltinEdit().run(EditInput(prompt="vintage, blur the background", source=source), control)
    fractions = [fraction for fraction, _ in control.calls]
    assert len(fractions) >= 3
    assert fractions == sorted(fractions)
    assert min(fractions) >= 0.0 and max(fractions) <= 1.0


@pytest.mark.parametrize("cancel_after", [0, 2])
def test_cancel_stops_the_edit(source: Image.Image, cancel_after: int) -> None:
    control = RecordingControl(cancel_after=cancel_after)
    with pytest.raises(Cancelled):
        BuiltinEdit().run(EditInput(prompt="warmer, brighter, add grain", source=source), control)
    assert len(control.calls) == cancel_after + 1
