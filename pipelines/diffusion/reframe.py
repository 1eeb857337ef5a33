"""Outpainting: show the source at a new aspect ratio, the new area painted by an inpainting model.

The source is fitted inside the new canvas (as the builtin reframe places it); the new area is
pre-filled by OpenCV inpainting (so the model starts from the scene's colours, not grey), and its
mask is grown a little into the source and feathered, so the model repaints a thin band of the
source edge and the join has no line. The inpainting pipeline (`AutoPipelineForInpainting` made
from the registry's `reframe` weights) works at the model's native area with the canvas's aspect
ratio; the result is resized to the exact size and the source is pasted back at full resolution
through the feathered mask (the seam blend).
"""

from __future__ import annotations

from collections.abc import Hashable

import cv2
import numpy as np
from numpy.typing import NDArray
from PIL import Image

from pipelines.base import ImageOutput, ReframeInput
from pipelines.diffusion.image_pipeline import BatchProgress, Call, DiffusionPipeline, Slot
from pipelines.diffusion.presets import native_size, quality_settings, size_multiple
from pipelines.media.framing import placement

INPAINTING = "inpainting"
LANCZOS = Image.Resampling.LANCZOS
SEAM_SHARE = 0.03  # how far the repainted band reaches into the source, of the canvas's side


def canvas_and_mask(
    source: Image.Image, width: int, height: int
) -> tuple[NDArray[np.uint8], NDArray[np.float32], tuple[int, int, int, int]]:
    """The source placed on a `width` x `height` canvas with the new area pre-filled, the
    feathered mask of what to paint (1 new, 0 keep) and where the source went."""
    left, top, box_width, box_height = placement(source.width, source.height, width, height)
    placed = np.asarray(source.convert("RGB").resize((box_width, box_height), LANCZOS))
    canvas = np.zeros((height, width, 3), np.uint8)
    canvas[top : top + box_height, left : left + box_width] = placed
    hole = np.full((height, width), 255, np.uint8)
    hole[top : top + box_height, left : left + box_width] = 0
    # Pre-fill at a small size: Telea is slow on large holes, and only colours matter here.
    scale = min(1.0, 256 / max(width, height))
    small = (max(2, round(width * scale)), max(2, round(height * scale)))
    filled = cv2.inpaint(
        cv2.resize(canvas, small, interpolation=cv2.INTER_AREA),
        cv2.resize(hole, small, interpolation=cv2.INTER_NEAREST),
        5,
        cv2.INPAINT_TELEA,
    )
    filled = cv2.resize(filled, (width, height), interpolation=cv2.INTER_CUBIC)
    canvas = np.where(hole[..., None] > 0, filled, canvas)
    band = max(1, round(SEAM_SHARE * min(width, height)))
    grown = cv2.dilate(hole, np.ones((2 * band + 1, 2 * band + 1), np.uint8))
    feathered = cv2.GaussianBlur(grown.astype(np.float32) / 255.0, (0, 0), band / 2)
    mask = np.maximum(feathered, hole.astype(np.float32) / 255.0)
    return canvas, mask, (left, top, box_width, box_height)


class DiffusionReframe(DiffusionPipeline[ReframeInput]):
    operation = "reframe"

    @property
    def task(self) -> str | None:
        """The entry's own class when it is an inpainting one (an SDXL inpainting checkpoint,
        FLUX Fill), else the inpainting pipeline made from its weights."""
        own = any(kind in self.spec.pipeline for kind in ("Inpaint", "Fill"))
        return None if own else INPAINTING

    def tasks(self) -> tuple[str | None, ...]:
        return (self.task,)

    def batch_key(self, inputs: ReframeInput) -> Hashable:
        return (inputs.width, inputs.height)

    def execute(self, inputs: list[ReframeInput], progress: BatchProgress) -> list[ImageOutput]:
        steps, guidance = quality_settings(self.spec)
        with self.cache.pipeline_for(self.spec, self.task) as pipe:
            multiple = size_multiple(pipe)
        first = inputs[0]
        width, height = native_size(self.spec, first.width, first.height, multiple)
        call = Call(
            self.task,
            {
                "num_inference_steps": steps,
                "guidance_scale": guidance,
                "strength": float(self.spec.option("strength", 1.0)),
                "width": width,
                "height": height,
            },
        )
        prepared = []
        prompt = str(self.spec.option("prompt", "the same scene, seamless continuation"))
        for member, job in enumerate(inputs):
            canvas, mask, box = canvas_and_mask(job.source, job.width, job.height)
            prepared.append((canvas, mask, box))
            if mask.max() > 0:  # same aspect ratio: nothing new to paint
                call.slots.append(
                    Slot(
                        member,
                        prompt,
                        job.seed,
                        image=Image.fromarray(canvas).resize((width, height), LANCZOS),
                        mask=Image.fromarray((mask * 255).astype(np.uint8)).resize((width, height)),
                    )
                )
        painted = dict(
            zip(
                (slot.member for slot in call.slots),
                self.run_call(call, progress) if call.slots else [],
                strict=True,
            )
        )
        outputs = []
        for member, (job, (canvas, mask, box)) in enumerate(zip(inputs, prepared, strict=True)):
            if member not in painted:
                outputs.append(
                    ImageOutput([Image.fromarray(canvas)], ["same aspect ratio; resized only"])
                )
                continue
            pixels = np.asarray(
                painted[member].convert("RGB").resize((job.width, job.height), LANCZOS),
                np.float32,
            )
            alpha = mask[..., None]
            blended = pixels * alpha + canvas.astype(np.float32) * (1 - alpha)
            outputs.append(
                ImageOutput(
                    images=[Image.fromarray(np.clip(blended, 0, 255).astype(np.uint8))],
                    notes=[
                        f"{self.spec.model}: outpainted around the source at {box[2]}x{box[3]}, "
                        f"{steps} steps at {width}x{height}"
                    ],
                )
            )
        return outputs
