"""Upscaling with a diffusion upscaler (`StableDiffusionUpscalePipeline`, x4), tiled.

The source is brought to a quarter of the target size (the model's input), cut into
overlapping tiles of `tile` px (default 128: 512 px out, what the x4 upscaler was trained at),
each tile upscaled (the tiles of one job batched `batch_limit` at a time), and the tiles laid
back with linear weights across each overlap, so there is no visible grid; a 4K result is 45
tiles of 512 px, never one 4K activation. The result is resized to the exact size.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from pipelines.base import ImageOutput, UpscaleInput
from pipelines.diffusion.image_pipeline import BatchProgress, Call, DiffusionPipeline, Slot
from pipelines.diffusion.presets import quality_settings


def tile_starts(length: int, tile: int, overlap: int) -> list[int]:
    """Starts of tiles of `tile` px covering `length` px, consecutive ones overlapping by at
    least `overlap`; the last tile ends exactly at the edge."""
    if length <= tile:
        return [0]
    count = math.ceil((length - overlap) / (tile - overlap))
    stride = (length - tile) / (count - 1)
    return [round(index * stride) for index in range(count)]


def ramp(size: int, overlap: int, first: bool, last: bool) -> NDArray[np.float32]:
    """A tile's blend weights along one axis: rising over the overlap, flat, falling."""
    weights = np.ones(size, np.float32)
    edge = min(overlap, size // 2)
    if edge > 0:
        rising = (np.arange(edge, dtype=np.float32) + 0.5) / edge
        if not first:
            weights[:edge] = rising
        if not last:
            weights[size - edge :] = rising[::-1]
    return weights


class DiffusionUpscale(DiffusionPipeline[UpscaleInput]):
    operation = "upscale"

    def execute(self, inputs: list[UpscaleInput], progress: BatchProgress) -> list[ImageOutput]:
        return [self._upscale(job, progress) for job in inputs]

    def _upscale(self, job: UpscaleInput, progress: BatchProgress) -> ImageOutput:
        factor = int(self.spec.option("scale", 4))
        tile = int(self.spec.option("tile", 128))
        overlap = int(self.spec.option("overlap", 16))
        steps, guidance = quality_settings(self.spec)
        low_width = max(1, math.ceil(job.width / factor))
        low_height = max(1, math.ceil(job.height / factor))
        low = job.source.convert("RGB").resize((low_width, low_height), Image.Resampling.LANCZOS)
        boxes = [
            (x, y, min(tile, low_width), min(tile, low_height))
            for y in tile_starts(low_height, tile, overlap)
            for x in tile_starts(low_width, tile, overlap)
        ]
        prompt = str(self.spec.option("prompt", "high detail, sharp"))
        arguments = {"num_inference_steps": steps, "guidance_scale": guidance}
        if "noise_level" in self.spec.options:
            arguments["noise_level"] = int(self.spec.options["noise_level"])
        canvas = np.zeros((low_height * factor, low_width * factor, 3), np.float32)
        weight = np.zeros((low_height * factor, low_width * factor, 1), np.float32)
        chunk = self.spec.batch_limit
        for start in range(0, len(boxes), chunk):
            part = boxes[start : start + chunk]
            progress.within(start / len(boxes), (start + len(part)) / len(boxes))
            call = Call(
                None,
                arguments,
                [
                    Slot(0, prompt, job.seed + start + index, image=low.crop((x, y, x + w, y + h)))
                    for index, (x, y, w, h) in enumerate(part)
                ],
            )
            for (x, y, w, h), image in zip(part, self.run_call(call, progress), strict=True):
                out_w, out_h = w * factor, h * factor
                pixels = np.asarray(image.convert("RGB").resize((out_w, out_h)), np.float32)
                blend = (
                    ramp(out_h, overlap * factor, y == 0, y + h >= low_height)[:, None]
                    * ramp(out_w, overlap * factor, x == 0, x + w >= low_width)[None, :]
                )
                top, left = y * factor, x * factor
                canvas[top : top + out_h, left : left + out_w] += pixels * blend[..., None]
                weight[top : top + out_h, left : left + out_w] += blend[..., None]
        merged = canvas / np.maximum(weight, 1e-6)
        image = Image.fromarray(np.clip(merged, 0, 255).astype(np.uint8))
        if image.size != (job.width, job.height):
            image = image.resize((job.width, job.height), Image.Resampling.LANCZOS)
        return ImageOutput(
            images=[image],
            notes=[
                f"{self.spec.model}: x{factor} in {len(boxes)} tiles of {tile} px "
                f"(overlap {overlap}), {steps} steps"
            ],
        )
