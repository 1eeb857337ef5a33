"""The builtin upscale: Real-ESRGAN to the exact size, better than Lanczos, with a fallback."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from pipelines.base import Cancelled, UpscaleInput
from pipelines.builtin import superres
from pipelines.builtin.superres import SuperResolution, shared_super_resolution
from pipelines.builtin.upscale import BuiltinUpscale
from tests.support.control import RecordingControl

needs_model = pytest.mark.skipif(
    not shared_super_resolution().available,
    reason=f"Real-ESRGAN unavailable: {shared_super_resolution().unavailable_reason}",
)


def sharp_picture() -> Image.Image:
    """Hard edges in several colours and directions: what super-resolution is for."""
    image = Image.new("RGB", (256, 256), (240, 235, 220))
    draw = ImageDraw.Draw(image)
    for index in range(8):
        draw.rectangle((10 + 30 * index, 20, 24 + 30 * index, 120), fill=(20, 30, 60))
    draw.ellipse((30, 140, 120, 230), fill=(200, 40, 40))
    draw.ellipse((140, 140, 240, 240), outline=(0, 0, 0), width=6)
    draw.polygon([(130, 130), (250, 130), (190, 20)], fill=(30, 120, 60))
    return image


def upscale(source: Image.Image, width: int, height: int) -> tuple[Image.Image, list[str]]:
    output = BuiltinUpscale().run(
        UpscaleInput(source=source, width=width, height=height), RecordingControl()
    )
    assert len(output.images) == 1
    return output.images[0], output.notes


def psnr(first: Image.Image, second: Image.Image) -> float:
    error = np.asarray(first, np.float32) - np.asarray(second, np.float32)
    return float(10 * np.log10(255.0**2 / np.mean(error**2)))


@needs_model
def test_output_has_the_exact_size() -> None:
    source = sharp_picture().resize((256, 144))
    image, notes = upscale(source, 1024, 576)
    assert image.size == (1024, 576)
    assert image.mode == "RGB"
    assert "Real-ESRGAN" in notes[0]
    # An odd target that is not a whole multiple of the source.
    assert upscale(sharp_picture().resize((50, 37)), 171, 127)[0].size == (171, 127)


@needs_model
def test_it_beats_lanczos_on_a_sharp_picture() -> None:
    original = sharp_picture()
    small = original.resize((64, 64), Image.Resampling.BOX)
    model, _ = upscale(small, 256, 256)
    lanczos = small.resize((256, 256), Image.Resampling.LANCZOS)
    assert psnr(model, original) > psnr(lanczos, original) + 1.0


@needs_model
def test_same_source_same_bytes() -> None:
    source = sharp_picture().resize((300, 200))  # several tiles, stitched
    assert upscale(source, 600, 400)[0].tobytes() == upscale(source, 600, 400)[0].tobytes()


@needs_model
def test_tiles_join_as_if_the_picture_were_one_tile(monkeypatch: pytest.MonkeyPatch) -> None:
    source = sharp_picture().resize((320, 320))
    tiled = np.asarray(upscale(source, 640, 640)[0], np.float32)
    monkeypatch.setattr(superres, "TILE", 1024)
    whole = np.asarray(upscale(source, 640, 640)[0], np.float32)
    assert np.abs(tiled - whole).max() <= 8
    assert np.abs(tiled - whole).mean() < 0.5


@needs_model
def test_cancel_stops_between_tiles() -> None:
    control = RecordingControl(cancel_after=2)
    with pytest.raises(Cancelled):
        BuiltinUpscale().run(
            UpscaleInput(source=sharp_picture().resize((300, 300)), width=600, height=600),
            control,
        )
    assert len(control.calls) == 3
    assert max(fraction for fraction, _ in control.calls) <= 0.9


def test_without_the_native_library_it_falls_back_to_lanczos() -> None:
    pipeline = BuiltinUpscale()
    pipeline.engine = SuperResolution()
    pipeline.engine.unavailable_reason = "libvulkan.so.1: cannot open shared object file"
    source = sharp_picture().resize((64, 64))
    output = pipeline.run(UpscaleInput(source=source, width=200, height=200), RecordingControl())
    expected = source.resize((200, 200), Image.Resampling.LANCZOS)
    assert output.images[0].tobytes() == expected.tobytes()
    assert "unavailable" in output.notes[0]
    assert "libvulkan" in output.notes[0]


def test_a_target_no_larger_than_the_source_is_a_plain_fit() -> None:
    image, notes = upscale(sharp_picture(), 128, 128)
    assert image.size == (128, 128)
    assert "no enlargement" in notes[0]
