"""The diffusion image pipelines for tests: tiny models, and a generate that tests can steer.

`SteerableGenerate` is the real `DiffusionGenerate`; only its diffusers call is wrapped, so
every test still runs the real pipeline classes on the tiny random-weight models. The prompt
of a call steers it: `[slow]` sleeps after each denoising step (time to cancel mid-steps),
`[oom>1]` raises CUDA's out-of-memory error for calls of more than one image, `[oom]` for
every call. Every call is recorded (its number of images, prompts, steps run, and when it is
over).
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from models.testing import build_tiny_models
from pipelines.diffusion.generate import DiffusionGenerate

STEP_SLEEP_SECONDS = 0.25


@functools.cache
def tiny_registry_path() -> Path:
    """The tiny models, built once per test process (about ten seconds), and their registry."""
    folder = Path(tempfile.mkdtemp(prefix="sfumato-tiny-models-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return build_tiny_models(folder)


@dataclass
class RecordedCall:
    prompts: list[str]
    # The call's steering, as diffusers was given it.
    negative_prompts: list[str] | None = None
    steps: int | None = None
    guidance: float | None = None
    steps_run: int = 0
    out_of_memory: bool = False
    over: threading.Event = field(default_factory=threading.Event)
    images: int = field(init=False)

    def __post_init__(self) -> None:
        self.images = len(self.prompts)


CALLS: list[RecordedCall] = []
_calls_lock = threading.Lock()


def calls_with(text: str) -> list[RecordedCall]:
    """The recorded calls any of whose prompts contains `text`."""
    with _calls_lock:
        return [call for call in CALLS if any(text in prompt for prompt in call.prompts)]


class SteerableGenerate(DiffusionGenerate):
    def invoke(self, pipe: Any, arguments: dict[str, Any]) -> Any:
        prompts = list(arguments["prompt"])
        negative = arguments.get("negative_prompt")
        record = RecordedCall(
            prompts,
            None if negative is None else list(negative),
            arguments.get("num_inference_steps"),
            arguments.get("guidance_scale"),
        )
        with _calls_lock:
            CALLS.append(record)
        if any("[oom]" in p for p in prompts) or (
            len(prompts) > 1 and any("[oom>1]" in p for p in prompts)
        ):
            record.out_of_memory = True
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        slow = any("[slow]" in p for p in prompts)
        callback = arguments["callback_on_step_end"]

        def counted(pipeline: Any, step: int, timestep: Any, tensors: dict[str, Any]) -> Any:
            record.steps_run = step + 1
            if slow:
                time.sleep(STEP_SLEEP_SECONDS)
            return callback(pipeline, step, timestep, tensors)

        try:
            return super().invoke(pipe, arguments | {"callback_on_step_end": counted})
        finally:
            record.over.set()
