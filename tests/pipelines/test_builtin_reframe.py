"""The builtin reframe: exact size, the source kept intact, the new area filled without seams."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from core.sizes import image_size
from pipelines.base import Cancelled, GenerateInput, ReframeInput
from pipelines.builtin.generate import BuiltinGenerate
from pipelines.builtin.reframe import BuiltinReframe
from pipelines.media.framing import placement
from tests.support.control import RecordingControl


@pytest.fixture(scope="module")
def source() -> Image.Image:
    inputs = GenerateInput(prompt="sunset over mountains", width=96, height=96, seed=5)
    return BuiltinGenerate().run(inputs, RecordingControl()).images[0]


def reframe(source: Image.Image, width: int, height: int, seed: int = 1) -> Image.Image:
    output = BuiltinReframe().run(
        ReframeInput(source=source, width=width, height=height, seed=seed), RecordingControl()
    )
    assert len(output.images) == 1
    return output.images[0]


def values(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.float32)


def test_a_1k_reframe_has_the_exact_size(source: Image.Image) -> None:
    width, height = image_size("21:9", "1K")
    image = reframe(source.resize((1024, 1024)), width, height)
    assert image.mode == "RGB"
    assert image.size == (width, height)


@pytest.mark.parametrize(("width", "height"), [(384, 48), (48, 384), (160, 96), (96, 160)])
def test_the_source_stays_intact_in_the_middle(
    source: Image.Image, width: int, height: int
) -> None:
    small = source.resize((48, 48)) if min(width, height) == 48 else source
    image = reframe(small, width, height)
    assert image.size == (width, height)
    left, top, box_width, box_height = placement(small.width, small.height, width, height)
    assert (box_width, box_height) == small.size
    inside = values(image)[top : top + box_height, left : left + box_width]
    assert np.array_equal(inside, values(small))


def test_the_new_area_is_not_a_flat_bar(source: Image.Image) -> None:
    image = values(reframe(source, 288, 96))
    new_area = np.concatenate([image[:, :96], image[:, 192:]], axis=1)
    # Every column of the new area varies down its height like the source's columns do.
    column_spread = new_area.std(axis=0).mean(axis=1)
    assert column_spread.min() > 0.25 * values(source).std(axis=0).mean()
    # And it is not one colour sideways either: rows vary too.
    assert new_area.std(axis=1).mean() > 1.0


@pytest.mark.parametrize(("width", "height"), [(288, 96), (96, 288)])
def test_there_is_no_hard_seam(source: Image.Image, width: int, height: int) -> None:
    image = values(reframe(source, width, height))
    if width > height:
        inside_steps = np.abs(np.diff(image[:, 96:192], axis=1)).mean()
        seam_steps = (
            np.abs(image[:, 96] - image[:, 95]).mean()
            + np.abs(image[:, 192] - image[:, 191]).mean()
        )
    else:
        inside_steps = np.abs(np.diff(image[96:192], axis=0)).mean()
        seam_steps = np.abs(image[96] - image[95]).mean() + np.abs(image[192] - image[191]).mean()
    assert seam_steps / 2 < 2.5 * inside_steps + 1.0


def test_same_seed_same_picture_other_seed_other_fill(source: Image.Image) -> None:
    first = reframe(source, 288, 96, seed=1)
    assert first.tobytes() == reframe(source, 288, 96, seed=1).tobytes()
    assert first.tobytes() != reframe(source, 288, 96, seed=2).tobytes()


def test_the_same_ratio_is_a_resize(source: Image.Image) -> None:
    image = reframe(source, 48, 48)
    assert image.size == (48, 48)


def test_progress_rises_within_the_reframes_own_work(source: Image.Image) -> None:
    control = RecordingControl()
    BuiltinReframe().run(ReframeInput(source=source, width=288, height=96), control)
    fractions = [fraction for fraction, _ in control.calls]
    assert len(fractions) >= 3
    assert fractions == sorted(fractions)
    assert min(fractions) >= 0.0 and max(fractions) <= 1.0


@pytest.mark.parametrize("cancel_after", [0, 2])
def test_cancel_stops_the_reframe(source: Image.Image, cancel_after: int) -> None:
    control = RecordingControl(cancel_after=cancel_after)
    with pytest.raises(Cancelled):
        BuiltinReframe().run(ReframeInput(source=source, width=288, height=96), control)
    assert len(control.calls) == cancel_after + 1
