"""The builtin generator: exact sizes, determinism, variations, prompt colours, progress, cancel."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from unittest.mock import ANY

import numpy as np
import pytest
from PIL import Image

from pipelines.base import Cancelled, GenerateInput, GeneratePipeline, StyleHints
from pipelines.builtin.generate import BuiltinGenerate
from pipelines.builtin.painting_styles import LEARNED_STYLES, find_learned_style
from tests.support.control import RecordingControl

BASE = GenerateInput(prompt="sunset over mountains", width=256, height=256, seed=42)


def generate(**changes: Any) -> list[Image.Image]:
    return BuiltinGenerate().run(replace(BASE, **changes), RecordingControl()).images


def mean_rgb(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.float32).mean(axis=(0, 1))


def mean_difference(first: Image.Image, second: Image.Image) -> float:
    a = np.asarray(first, dtype=np.float32)
    b = np.asarray(second, dtype=np.float32)
    return float(np.abs(a - b).mean())


def test_it_is_the_generate_pipeline() -> None:
    pipeline = BuiltinGenerate()
    assert isinstance(pipeline, GeneratePipeline)
    assert pipeline.operation == "generate"


@pytest.mark.parametrize(
    ("width", "height", "quality", "prompt"),
    [
        (256, 256, "medium", "sunset over mountains"),
        (1001, 333, "low", "night city"),  # odd size, painted at half size then resized
        (120, 200, "high", "calm blue sea"),
        (200, 64, "medium", "galaxy nebula in space"),
        (1, 1, "medium", "forest"),
    ],
)
def test_images_have_the_exact_size(width: int, height: int, quality: str, prompt: str) -> None:
    images = generate(prompt=prompt, width=width, height=height, quality=quality, variations=2)
    assert len(images) == 2
    for image in images:
        assert image.mode == "RGB"
        assert image.size == (width, height)


def test_same_inputs_give_identical_bytes() -> None:
    first = generate(variations=2, quality="high")
    second = generate(variations=2, quality="high")
    assert [image.tobytes() for image in first] == [image.tobytes() for image in second]


def test_each_variation_depends_only_on_seed_and_index() -> None:
    alone = generate(variations=1)
    among_others = generate(variations=3)
    assert alone[0].tobytes() == among_others[0].tobytes()


@pytest.mark.parametrize("prompt", ["sunset over mountains", "calm blue sea", "night city"])
def test_variations_differ_visibly(prompt: str) -> None:
    images = generate(prompt=prompt, variations=3)
    for i in range(3):
        for j in range(i + 1, 3):
            assert mean_difference(images[i], images[j]) > 6.0


def test_another_seed_gives_another_picture() -> None:
    assert mean_difference(generate(seed=1)[0], generate(seed=2)[0]) > 6.0


@pytest.mark.parametrize("scene", ["", "mountains at noon", "sunset over the sea", "city at night"])
def test_red_prompt_is_red_and_blue_prompt_is_blue(scene: str) -> None:
    red = mean_rgb(generate(prompt=f"red {scene}")[0])
    blue = mean_rgb(generate(prompt=f"blue {scene}")[0])
    assert red[0] > red[2] + 10
    assert blue[2] > blue[0] + 10
    assert (red[0] - red[2]) - (blue[0] - blue[2]) > 30


def test_unknown_words_still_pick_a_palette_from_the_text() -> None:
    cat = generate(prompt="a cat wearing a hat")[0]
    report = generate(prompt="quarterly report")[0]
    assert np.abs(mean_rgb(cat) - mean_rgb(report)).max() > 10


def test_style_palette_dominates() -> None:
    green = mean_rgb(generate(prompt="blue sky", style=StyleHints(palette=("#10c040",)))[0])
    assert green[1] > green[0] + 30
    assert green[1] > green[2] + 30


def test_references_pull_the_palette_towards_their_colours() -> None:
    orange = Image.new("RGB", (40, 30), (240, 120, 20))
    plain = mean_rgb(generate(prompt="hills")[0])
    tinted = mean_rgb(generate(prompt="hills", references=(orange,))[0])
    assert tinted[0] - tinted[2] > plain[0] - plain[2] + 30


def test_progress_is_reported_several_times_per_image_and_rises() -> None:
    control = RecordingControl()
    BuiltinGenerate().run(replace(BASE, variations=2), control)
    fractions = [fraction for fraction, _ in control.calls]
    assert len(fractions) >= 2 * 3
    assert fractions == sorted(fractions)
    assert all(0.0 <= fraction <= 1.0 for fraction in fractions)


@pytest.mark.parametrize("cancel_after", [0, 3])
def test_cancel_from_progress_propagates(cancel_after: int) -> None:
    control = RecordingControl(cancel_after=cancel_after)
    with pytest.raises(Cancelled):
        BuiltinGenerate().run(replace(BASE, variations=2), control)
    assert len(control.calls) == cancel_after + 1


def test_unknown_quality_is_refused() -> None:
    with pytest.raises(ValueError, match="quality"):
        generate(quality="ultra")


@pytest.mark.parametrize(
    ("prompt", "style"),
    [
        ("a watercolour of misty hills", "watercolour"),
        ("Ukiyo-e sea at sunset", "ukiyo-e"),
        ("city skyline, pop art", "pop art"),
        ("oil painting of a forest", "golden impasto"),
        ("van gogh style night over a town", "van gogh swirls"),
        ("a pencil sketch of mountains", "pencil hatching"),
    ],
)
def test_art_style_words_pick_a_learned_style(prompt: str, style: str) -> None:
    found = find_learned_style(prompt)
    assert found is not None
    assert found[0].name == style


def test_scene_words_pick_no_style() -> None:
    assert find_learned_style("pink sky over the painted desert") is None  # "ink" in "pink"
    assert find_learned_style("dunes under a starry night sky") is None


def test_every_learned_style_has_a_name_and_words() -> None:
    assert sorted(style.index for style in LEARNED_STYLES) == list(range(26))
    assert len({style.name for style in LEARNED_STYLES}) == 26
    for style in LEARNED_STYLES:
        assert find_learned_style(f"hills, {style.name}") == (style, ANY)
        for words in style.words:
            found = find_learned_style(f"hills in {words}")
            assert found is not None and found[0] == style, words


def test_a_style_word_repaints_the_picture_and_says_so() -> None:
    plain = BuiltinGenerate().run(replace(BASE, prompt="hills at noon"), RecordingControl())
    styled = BuiltinGenerate().run(
        replace(BASE, prompt="hills at noon, pop art"), RecordingControl()
    )
    assert mean_difference(plain.images[0], styled.images[0]) > 20
    assert any("'pop art'" in note for note in styled.notes)
    watercolour = generate(prompt="hills at noon, watercolour")[0]
    assert np.abs(mean_rgb(watercolour) - mean_rgb(styled.images[0])).max() > 15


def test_a_styled_picture_is_repeatable() -> None:
    first = generate(prompt="mountains at dawn in the style of van gogh")
    second = generate(prompt="mountains at dawn in the style of van gogh")
    assert first[0].tobytes() == second[0].tobytes()


def test_references_lend_their_look_through_style_transfer() -> None:
    def striped(colour: tuple[int, int, int]) -> Image.Image:
        stripes = np.zeros((64, 64, 3), np.uint8)
        stripes[:, ::8] = colour
        stripes[:, 1::8] = colour
        return Image.fromarray(stripes)

    output = BuiltinGenerate().run(
        replace(BASE, prompt="hills", references=(striped((250, 200, 40)),)), RecordingControl()
    )
    assert any("reference" in note for note in output.notes)
    purple = generate(prompt="hills", references=(striped((150, 40, 250)),))[0]
    assert np.abs(mean_rgb(output.images[0]) - mean_rgb(purple)).max() > 15


def test_a_subject_it_cannot_draw_is_said_plainly() -> None:
    output = BuiltinGenerate().run(replace(BASE, prompt="a quarterly report"), RecordingControl())
    cannot = [note for note in output.notes if note.startswith("cannot draw")]
    assert len(cannot) == 1, output.notes
    assert "(report)" in cannot[0]
    assert "sfumato models pull" in cannot[0]


def test_unknown_words_beside_a_scene_are_named_and_style_words_are_not() -> None:
    notes = (
        BuiltinGenerate()
        .run(
            replace(BASE, prompt="a lighthouse on the coast at dusk, watercolour"),
            RecordingControl(),
        )
        .notes
    )
    assert any(note.startswith("not drawn: lighthouse.") for note in notes), notes
    drawable = (
        BuiltinGenerate()
        .run(
            replace(BASE, prompt="a beautiful sunset over the mountains, oil painting"),
            RecordingControl(),
        )
        .notes
    )
    assert not any("drawn" in note or "cannot draw" in note for note in drawable), drawable


def test_a_brand_style_palette_name_never_picks_an_art_style() -> None:
    # A style whose palette is led by a colour named "Charcoal" (and whose aesthetic names a
    # "sea green" and a font) lends its colours and moods, never the pencil style or a sea.
    brand = StyleHints(
        palette=("#333333", "#2e8b57", "#f5f0e6"),
        tone=("calm",),
        aesthetic="A light, cool palette led by charcoal on sea green, set in Mosaic Sans "
        "headings; the voice is calm.",
    )
    output = BuiltinGenerate().run(
        replace(BASE, prompt="hills at noon", style=brand), RecordingControl()
    )
    unnamed = replace(brand, aesthetic="A light, cool palette; the voice is calm.")
    same_moods = BuiltinGenerate().run(
        replace(BASE, prompt="hills at noon", style=unnamed), RecordingControl()
    )
    assert not any("learned style" in note for note in output.notes), output.notes
    assert output.notes[0].startswith("builtin procedural painter: land layout")
    assert any(note.startswith("brand style: its 3 colours, moods ") for note in output.notes)
    # The colour and font names change nothing: the same picture as without them.
    assert output.images[0].tobytes() == same_moods.images[0].tobytes()
