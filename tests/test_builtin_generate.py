"""The builtin generator: exact sizes, determinism, variations, prompt colours, progress, cancel."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pipelines.base import Cancelled, GenerateInput, GeneratePipeline, StyleHints
from pipelines.builtin.generate import BuiltinGenerate

BASE = GenerateInput(prompt="sunset over mountains", width=256, height=256, seed=42)


class RecordingControl:
    """Records progress calls; raises `Cancelled` on the call after `cancel_after` if given."""

    def __init__(self, cancel_after: int | None = None) -> None:
        self.calls: list[tuple[float, str | None]] = []
        self.cancel_after = cancel_after

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.calls.append((fraction, message))
        if self.cancel_after is not None and len(self.calls) > self.cancel_after:
            raise Cancelled


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
