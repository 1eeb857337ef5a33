"""The diffusion animate pipeline with its model call steerable from the prompt, for tests.

Only the edge is steered, the diffusers call (`VideoModel.invoke`); everything else is the real
pipeline on the tiny models. In the prompt:
- `[oom N]`: the first N calls for this prompt raise CUDA's out-of-memory error;
- `[slow-steps S]`: every denoising step takes S seconds more (time to cancel mid-steps).
Each call, each step and each call that raised after its model started are appended to the file
`SFUMATO_TEST_STEP_LOG` names, as JSON lines `{"prompt": ..., "event": "call" | "step" |
"raised", "step": i}`, so a test in another process (the distributed worker) can see how many
calls and steps ran, and wait for a cancelled call to be over.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from typing import Any

import torch

from pipelines.diffusion.animate import DiffusionAnimate

OOM = re.compile(r"\[oom (\d+)\]")
SLOW_STEPS = re.compile(r"\[slow-steps (\d+(?:\.\d+)?)\]")


def _log(prompt: str, event: str, step: int | None = None) -> None:
    path = os.environ.get("SFUMATO_TEST_STEP_LOG")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps({"prompt": prompt, "event": event, "step": step}) + "\n")


def logged(path: str, prompt: str) -> list[dict[str, Any]]:
    """The events logged for `prompt`, in order."""
    if not os.path.exists(path):
        return []
    with open(path) as log:
        events = [json.loads(line) for line in log if line.strip()]
    return [event for event in events if event["prompt"] == prompt]


class SteerableAnimate(DiffusionAnimate):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        real_invoke = self.model.invoke

        def invoke(pipe: Any, arguments: dict[str, Any]) -> Any:
            prompt = arguments["prompt"]
            self.calls[prompt] += 1
            _log(prompt, "call")
            failures = OOM.search(prompt)
            if failures and self.calls[prompt] <= int(failures.group(1)):
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
            slow = SLOW_STEPS.search(prompt)
            delay = float(slow.group(1)) if slow else 0.0
            step_end = arguments["callback_on_step_end"]

            def logged_step_end(pipeline: Any, step: int, timestep: Any, tensors: dict) -> dict:
                _log(prompt, "step", step)
                time.sleep(delay)
                return step_end(pipeline, step, timestep, tensors)

            try:
                return real_invoke(pipe, arguments | {"callback_on_step_end": logged_step_end})
            except BaseException:
                _log(prompt, "raised")
                raise

        self.model.invoke = invoke  # type: ignore[method-assign]
