"""Each image and video operation as the worker runs it: the pipeline's typed input made from
the job (its input images read from storage, where the gateway put them when it resolved them)
and the pipeline the registry names, run under the job's control. Image operations go through
the batcher, so compatible jobs running at once can share one pipeline call."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from PIL import Image

from core.images import decode_first_frame
from core.services import Services
from core.storage import StorageError
from core.tables import Job
from pipelines.base import (
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
        self._runs: dict[str, Callable[[Job, JobControl, str], ImageOutput | VideoOutput]] = {
            "generate": self._generate,
            "edit": self._edit,
            "reframe": self._reframe,
            "upscale": self._upscale,
            "animate": self._animate,
            "transition": self._transition,
        }

    def run(self, job: Job, control: JobControl, scratch: str) -> ImageOutput | VideoOutput:
        """The pipeline's output; a video is written into the folder `scratch`."""
        return self._runs[job.operation](job, control, scratch)

    def _generate(self, job: Job, control: JobControl, _scratch: str) -> ImageOutput:
        inputs = job.inputs
        request = GenerateInput(
            prompt=inputs["prompt"],
            width=inputs["width"],
            height=inputs["height"],
            quality=inputs["quality"],
            variations=inputs["variations"],
            seed=job.seed,
            references=self._load_images(inputs["references"]),
            style=_style_hints(inputs.get("style")),
        )
        return self._run_image(job, request, control)

    def _edit(self, job: Job, control: JobControl, _scratch: str) -> ImageOutput:
        inputs = job.inputs
        request = EditInput(
            prompt=inputs["prompt"],
            source=self._load_images([inputs["source"]])[0],
            seed=job.seed,
            references=self._load_images(inputs["references"]),
            style=_style_hints(inputs.get("style")),
        )
        return self._run_image(job, request, control)

    def _reframe(self, job: Job, control: JobControl, _scratch: str) -> ImageOutput:
        return self._to_size(job, control, ReframeInput)

    def _upscale(self, job: Job, control: JobControl, _scratch: str) -> ImageOutput:
        return self._to_size(job, control, UpscaleInput)

    def _to_size(
        self, job: Job, control: JobControl, input_type: type[ReframeInput | UpscaleInput]
    ) -> ImageOutput:
        """Reframe and upscale: the source image brought to the job's width and height."""
        inputs = job.inputs
        request = input_type(
            source=self._load_images([inputs["source"]])[0],
            width=inputs["width"],
            height=inputs["height"],
            seed=job.seed,
        )
        return self._run_image(job, request, control)

    def _run_image(self, job: Job, request: Any, control: JobControl) -> ImageOutput:
        return self.batcher.run(self.pipelines.get(job.operation), request, control)

    def _animate(self, job: Job, control: JobControl, scratch: str) -> VideoOutput:
        image = self._load_images([job.inputs["image"]])[0]
        request = AnimateInput(image=image, **self._clip_fields(job, scratch))
        output: VideoOutput = self.pipelines.get(job.operation).run(request, control)
        return output

    def _transition(self, job: Job, control: JobControl, scratch: str) -> VideoOutput:
        start, end = self._load_images([job.inputs["startImage"], job.inputs["endImage"]])
        request = TransitionInput(start=start, end=end, **self._clip_fields(job, scratch))
        output: VideoOutput = self.pipelines.get(job.operation).run(request, control)
        return output

    def _clip_fields(self, job: Job, scratch: str) -> dict[str, Any]:
        """What animate and transition inputs share; the pipeline streams frames to the file."""
        inputs = job.inputs
        return {
            "prompt": inputs["prompt"],
            "duration": float(inputs["duration"]),
            "width": inputs["width"],
            "height": inputs["height"],
            "audio": inputs["audio"],
            "negative_prompt": inputs["negativePrompt"],
            "seed": job.seed,
            "output_path": os.path.join(scratch, "clip.mp4"),
        }

    def _load_images(self, entries: list[dict[str, Any]]) -> tuple[Image.Image, ...]:
        images = []
        for entry in entries:
            try:
                data = self.services.storage.get_bytes(entry["key"])
            except StorageError as error:
                raise InputUnavailable(entry["key"]) from error
            images.append(decode_first_frame(data))
        return tuple(images)


def _style_hints(stored: dict[str, Any] | None) -> StyleHints | None:
    if not stored:
        return None
    return StyleHints(
        palette=tuple(stored["palette"]), tone=tuple(stored["tone"]), aesthetic=stored["aesthetic"]
    )
