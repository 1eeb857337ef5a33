"""Each image and video operation as the worker runs it: the pipeline's typed input made from
the job (its input images read from storage, where the gateway put them when it resolved them)
and the pipeline the registry names, run under the job's control. Image operations go through
the batcher, so compatible jobs running at once can share one pipeline call."""

from __future__ import annotations

import os
from typing import Any

from PIL import Image

from core.images import decode_first_frame
from core.jobs.contract import (
    AnimateJobInputs,
    AppliedAdapter,
    EditJobInputs,
    GenerateJobInputs,
    InputImage,
    LentStyle,
    ReframeJobInputs,
    TransitionJobInputs,
    UpscaleJobInputs,
    inputs_of,
)
from core.services import Services
from core.storage import StorageError
from core.tables import JobRow
from pipelines.base import (
    Adapter,
    AnimateInput,
    EditInput,
    GenerateInput,
    ImageOutput,
    JobControl,
    ReframeInput,
    StyleHints,
    TransitionInput,
    UpscaleInput,
    VideoOutput,
)
from pipelines.registry import PipelineRegistry
from workers.batching import Batcher


class InputUnavailable(Exception):
    """An input image the job names could not be read from storage."""


class Operations:
    def __init__(self, services: Services, pipelines: PipelineRegistry, batcher: Batcher) -> None:
        self.services = services
        self.pipelines = pipelines
        self.batcher = batcher

    def run_image(self, job: JobRow, control: JobControl) -> ImageOutput:
        """The output of an image operation."""
        inputs = inputs_of(job.operation, job.inputs)
        if isinstance(inputs, GenerateJobInputs):
            generate = GenerateInput(
                prompt=inputs.prompt,
                width=inputs.width,
                height=inputs.height,
                quality=inputs.quality,
                variations=inputs.variations,
                seed=job.seed,
                references=self._load_images(inputs.references),
                style=_style_hints(inputs.style),
                negative_prompt=inputs.negative_prompt,
                steps=inputs.steps,
                guidance=inputs.guidance,
                adapters=_adapters(inputs.loras),
            )
            return self._run_image(job, generate, control, inputs.model)
        if isinstance(inputs, EditJobInputs):
            edit = EditInput(
                prompt=inputs.prompt,
                source=self._load_image(inputs.source),
                seed=job.seed,
                references=self._load_images(inputs.references),
                style=_style_hints(inputs.style),
                negative_prompt=inputs.negative_prompt,
                steps=inputs.steps,
                guidance=inputs.guidance,
                adapters=_adapters(inputs.loras),
                mask=None if inputs.mask is None else self._load_image(inputs.mask),
            )
            return self._run_image(job, edit, control, inputs.model)
        if isinstance(inputs, ReframeJobInputs | UpscaleJobInputs):
            # Both bring the source image to the job's width and height.
            input_type = ReframeInput if isinstance(inputs, ReframeJobInputs) else UpscaleInput
            to_size = input_type(
                source=self._load_image(inputs.source),
                width=inputs.width,
                height=inputs.height,
                seed=job.seed,
            )
            return self._run_image(job, to_size, control)
        raise LookupError(f"no image pipeline runs the operation {job.operation!r}")

    def run_video(self, job: JobRow, control: JobControl, scratch: str) -> VideoOutput:
        """The output of a video operation, its clip written into the folder `scratch`."""
        inputs = inputs_of(job.operation, job.inputs)
        clip = os.path.join(scratch, "clip.mp4")
        if isinstance(inputs, AnimateJobInputs):
            animate = AnimateInput(
                image=self._load_image(inputs.image), **_clip_fields(job, inputs, clip)
            )
            return self._run_video(job, animate, control)
        if isinstance(inputs, TransitionJobInputs):
            transition = TransitionInput(
                start=self._load_image(inputs.start_image),
                end=self._load_image(inputs.end_image),
                **_clip_fields(job, inputs, clip),
            )
            return self._run_video(job, transition, control)
        raise LookupError(f"no video pipeline runs the operation {job.operation!r}")

    def model_of(self, job: JobRow) -> str:
        """The id of the model a job runs on: the one it named, else its operation's default."""
        named: str | None = getattr(inputs_of(job.operation, job.inputs), "model", None)
        return named or self.pipelines.default_model(job.operation)

    def _run_image(
        self, job: JobRow, request: Any, control: JobControl, model: str | None = None
    ) -> ImageOutput:
        pipeline = self.pipelines.for_model(job.operation, model)
        return self.batcher.run(pipeline, request, control)

    def _run_video(self, job: JobRow, request: Any, control: JobControl) -> VideoOutput:
        output: VideoOutput = self.pipelines.get(job.operation).run(request, control)
        return output

    def _load_images(self, images: list[InputImage]) -> tuple[Image.Image, ...]:
        return tuple(self._load_image(image) for image in images)

    def _load_image(self, image: InputImage) -> Image.Image:
        try:
            data = self.services.storage.get_bytes(image.key)
        except StorageError as error:
            raise InputUnavailable(image.key) from error
        return decode_first_frame(data)


def _clip_fields(
    job: JobRow, inputs: AnimateJobInputs | TransitionJobInputs, output_path: str
) -> dict[str, Any]:
    """What animate and transition inputs share; the pipeline streams frames to the file."""
    return {
        "prompt": inputs.prompt,
        "duration": inputs.duration,
        "width": inputs.width,
        "height": inputs.height,
        "audio": inputs.audio,
        "negative_prompt": inputs.negative_prompt,
        "seed": job.seed,
        "output_path": output_path,
    }


def _adapters(loras: list[AppliedAdapter]) -> tuple[Adapter, ...]:
    return tuple(Adapter(lora.name, lora.scale) for lora in loras)


def _style_hints(style: LentStyle | None) -> StyleHints | None:
    if style is None:
        return None
    return StyleHints(
        palette=tuple(style.palette), tone=tuple(style.tone), aesthetic=style.aesthetic
    )
