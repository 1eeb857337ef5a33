"""Text to image with a diffusers model (SD 1.5, SDXL, SD3, FLUX families).

The registry's `generate` entry names the weights; the pipeline asks the cache for the
text-to-image pipeline of them (`AutoPipelineForText2Image` made from the entry's class), or the
image-to-image one when a job has references (the first reference, at `reference_strength`) or
a brand palette with `palette_strength` set (a palette init image).
"""

from __future__ import annotations

import time
from collections.abc import Hashable

from PIL import Image

from models.tuning import compiled_shapes, warming
from pipelines.base import GenerateInput, ImageOutput, NoControl
from pipelines.diffusion.brand_style import palette_image, style_prompt
from pipelines.diffusion.image_pipeline import (
    BatchProgress,
    Call,
    DiffusionPipeline,
    Slot,
    negative_prompt_notes,
    seed_of_image,
)
from pipelines.diffusion.presets import exact_size, native_size, quality_settings, size_multiple
from pipelines.media.framing import cover

TEXT_TO_IMAGE = "text-to-image"
IMAGE_TO_IMAGE = "image-to-image"


class DiffusionGenerate(DiffusionPipeline[GenerateInput]):
    operation = "generate"

    def tasks(self) -> tuple[str | None, ...]:
        return (TEXT_TO_IMAGE, IMAGE_TO_IMAGE)

    def _init_image(self, inputs: GenerateInput) -> tuple[str, float] | None:
        """Which image-to-image start this job has, and its strength; None: text only (an
        IP-Adapter, when the entry has one, takes the references instead)."""
        if inputs.references and not self.spec.option("ip_adapter"):
            return "reference", float(self.spec.option("reference_strength", 0.75))
        strength = float(self.spec.option("palette_strength", 0.0))
        if inputs.style and inputs.style.palette and strength > 0:
            return "palette", strength
        return None

    def warm_up(self) -> list[str]:
        """Compile the entry's compiled modules (models/tuning.py) for every shape a job of the
        warm-up aspect ratios can run: each batch size up to the capacity, with and without
        classifier-free guidance where the qualities differ in it. What was compiled, in how
        long, one line per shape; nothing when nothing compiles."""
        with self.cache.pipeline_for(self.spec, TEXT_TO_IMAGE) as pipe:
            if not compiled_shapes(pipe):
                return []
        qualities: dict[bool, str] = {}  # by whether it guides (a doubled batch): the first
        for quality in ("low", "medium", "high"):
            qualities.setdefault(quality_settings(self.spec, quality)[1] > 1, quality)
        lines: list[str] = []
        for ratio in self.spec.tuning.warm_up:
            width, height = (int(side) * 64 for side in ratio.split(":"))
            for quality in qualities.values():
                for batch in range(1, self.batch_capacity() + 1):
                    jobs = [
                        GenerateInput("warm-up", width, height, quality, seed=seed)
                        for seed in range(batch)
                    ]
                    started = time.perf_counter()
                    with (
                        self.cache.pipeline_for(self.spec, TEXT_TO_IMAGE) as pipe,
                        warming(pipe) as compiled,
                    ):
                        self.run_batch(jobs, [NoControl()] * batch)
                    lines.append(
                        f"compiled {', '.join(c.name for c in compiled)} for {ratio} "
                        f"({quality} quality) at batch {batch} in "
                        f"{time.perf_counter() - started:.1f} s"
                    )
        return lines

    def batch_key(self, inputs: GenerateInput) -> Hashable | None:
        if inputs.references and self.spec.option("ip_adapter"):
            return None  # an IP-Adapter call has one reference for all its images
        init = self._init_image(inputs)
        return (
            inputs.width,
            inputs.height,
            quality_settings(self.spec, inputs.quality, inputs.steps, inputs.guidance),
            init[1] if init else None,
            inputs.adapters,
        )

    def batch_weight(self, inputs: GenerateInput) -> int:
        return inputs.variations

    def execute(self, inputs: list[GenerateInput], progress: BatchProgress) -> list[ImageOutput]:
        first = inputs[0]  # batch members share size, steps, guidance, adapters, kind of start
        steps, guidance = quality_settings(self.spec, first.quality, first.steps, first.guidance)
        init = self._init_image(first)
        task = IMAGE_TO_IMAGE if init else TEXT_TO_IMAGE
        with self.cache.pipeline_for(self.spec, task) as pipe:
            multiple = size_multiple(pipe)
        width, height = native_size(self.spec, first.width, first.height, multiple)
        arguments = {"num_inference_steps": steps, "guidance_scale": guidance}
        if init:
            arguments["strength"] = init[1]
        else:
            arguments |= {"width": width, "height": height}
        call = Call(task, arguments, adapters=first.adapters)
        for member, job in enumerate(inputs):
            prompt = style_prompt(job.prompt, job.style)
            start = self._start_image(job, init, width, height)
            reference = job.references[0] if job.references and not init else None
            for variation in range(job.variations):
                call.slots.append(
                    Slot(
                        member,
                        prompt,
                        seed_of_image(job.seed, variation),
                        job.negative_prompt,
                        start,
                        reference=reference,
                    )
                )
        images = self.run_call(call, progress)
        outputs: list[ImageOutput] = []
        for member, job in enumerate(inputs):
            mine = [
                exact_size(image, job.width, job.height)
                for slot, image in zip(call.slots, images, strict=True)
                if slot.member == member
            ]
            notes = [f"{self.spec.model}: {steps} steps at {width}x{height}, seed {job.seed}"]
            if job.guidance is not None:
                notes.append(f"guidance {guidance:g}")
            notes += negative_prompt_notes(job.negative_prompt, guidance)
            notes += [f"LoRA {a.name} at scale {a.scale:g}" for a in job.adapters]
            if init:
                notes.append(f"started from the {init[0]} at strength {init[1]:g}")
            elif job.references:
                notes.append("the first reference image guides the picture (IP-Adapter)")
            if len(job.references) > 1:
                notes.append("only the first reference image was used")
            outputs.append(ImageOutput(images=mine, notes=notes))
        return outputs

    @staticmethod
    def _start_image(
        job: GenerateInput, init: tuple[str, float] | None, width: int, height: int
    ) -> Image.Image | None:
        if init is None:
            return None
        if init[0] == "reference":
            return Image.fromarray(cover(job.references[0], width, height))
        assert job.style is not None
        return palette_image(job.style.palette, width, height, job.seed)
