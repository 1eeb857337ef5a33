"""Edit an image as a prompt instructs, with a diffusers model.

With an instruction-edit class in the registry's `edit` entry (InstructPix2Pix, FLUX Kontext,
Qwen-Image-Edit) the source and the instruction go to it as they are; with any other class the
edit is image-to-image from the source (`AutoPipelineForImage2Image` made from its weights) at
`strength` (default 0.6), so the picture changes as much as the prompt asks, no more. The model
works at its native area with the source's aspect ratio; the result has the source's size.
"""

from __future__ import annotations

from collections.abc import Hashable

from PIL import Image

from pipelines.base import EditInput, ImageOutput
from pipelines.diffusion.brand_style import style_prompt
from pipelines.diffusion.image_pipeline import (
    BatchProgress,
    Call,
    DiffusionPipeline,
    Slot,
    negative_prompt_notes,
)
from pipelines.diffusion.presets import exact_size, native_size, quality_settings, size_multiple
from pipelines.media.framing import cover

INSTRUCTION_CLASSES = ("InstructPix2Pix", "Kontext", "QwenImageEdit")


class DiffusionEdit(DiffusionPipeline[EditInput]):
    operation = "edit"

    @property
    def instruction(self) -> bool:
        """Whether the entry's class edits by instruction (else: image-to-image)."""
        return self.spec.option("mode") == "instruction" or any(
            name in self.spec.pipeline for name in INSTRUCTION_CLASSES
        )

    def tasks(self) -> tuple[str | None, ...]:
        # Masked edits of an image-to-image model repaint through its inpainting twin.
        return (None,) if self.instruction else ("image-to-image", "inpainting")

    def batch_key(self, inputs: EditInput) -> Hashable:
        return (
            inputs.source.size,
            inputs.steps,
            inputs.guidance,
            inputs.adapters,
            inputs.mask is not None,
        )

    def execute(self, inputs: list[EditInput], progress: BatchProgress) -> list[ImageOutput]:
        first = inputs[0]  # batch members share size, steps, guidance, adapters, masking
        steps, guidance = quality_settings(self.spec, "medium", first.steps, first.guidance)
        inpainting = first.mask is not None and not self.instruction
        task = "inpainting" if inpainting else self.tasks()[0]
        with self.cache.pipeline_for(self.spec, task) as pipe:
            multiple = size_multiple(pipe)
        source_width, source_height = inputs[0].source.size
        width, height = native_size(self.spec, source_width, source_height, multiple)
        arguments: dict[str, object] = {"num_inference_steps": steps, "guidance_scale": guidance}
        if self.instruction:
            arguments["image_guidance_scale"] = float(self.spec.option("image_guidance", 1.5))
            if "InstructPix2Pix" not in self.spec.pipeline:
                arguments.pop("image_guidance_scale")
                arguments |= {"width": width, "height": height}
        else:
            arguments["strength"] = float(self.spec.option("strength", 0.6))
        call = Call(task, arguments, adapters=first.adapters)
        for member, job in enumerate(inputs):
            source = _fitted(job, width, height)
            prompt = style_prompt(job.prompt, job.style)
            mask = None
            if inpainting:
                assert job.mask is not None
                mask = Image.fromarray(cover(job.mask.convert("L"), width, height))
            call.slots.append(Slot(member, prompt, job.seed, job.negative_prompt, source, mask))
        images = self.run_call(call, progress)
        how = (
            "instruction edit" if self.instruction else f"image-to-image at {arguments['strength']}"
        )
        if inpainting:
            how = f"inpainting the mask at {arguments['strength']}"
        outputs = []
        for job, image in zip(inputs, images, strict=True):
            notes = [f"{self.spec.model}: {how}, {steps} steps at {width}x{height}"]
            notes += negative_prompt_notes(job.negative_prompt, guidance)
            if job.references:
                notes.append("reference images are not used by the diffusion edit")
            edited = exact_size(image, *job.source.size)
            if job.mask is not None:
                # Only the mask's white changes: the model's output is pasted back over the
                # source there (a VAE round trip shifts every pixel a little elsewhere).
                edited = Image.composite(
                    edited.convert("RGB"), job.source.convert("RGB"), job.mask.convert("L")
                )
                notes.append("applied inside the mask only")
            outputs.append(ImageOutput(images=[edited], notes=notes))
        return outputs


def _fitted(job: EditInput, width: int, height: int) -> Image.Image:
    return Image.fromarray(cover(job.source, width, height))
