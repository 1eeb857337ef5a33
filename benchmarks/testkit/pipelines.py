"""A generate pipeline the tests and benchmarks can steer through its prompt, wrapping the real one.

`[sleep S]` at the start of a prompt makes the job take S seconds in small cancellable steps and
then paint solid images of the promised size (fast, for tests about the job spine, not pixels);
a sleep cut short by a cancel is appended to the file `SFUMATO_TEST_PIPELINE_LOG` names (one
prompt a line, tests/conftest.py sets it for every process of a test run), so that a test, in
any mode, can wait for the worker to have stopped; `[preview]` after a `[sleep S]` shows a live
preview (a flat colour that warms as it goes) as often as the worker takes one; `[fail]` makes
it raise; `[echo-reference]` returns the first reference image resized, to show which pixels
reached the pipeline. Any other prompt goes to the builtin pipeline untouched.
"""

from __future__ import annotations

import os
import re
import time
from functools import partial

from PIL import Image

from pipelines.base import (
    AnimateInput,
    Cancelled,
    GenerateInput,
    ImageOutput,
    JobControl,
    VideoOutput,
    offer_preview,
)
from pipelines.builtin.animate import BuiltinAnimate
from pipelines.builtin.generate import BuiltinGenerate

# `SFUMATO_PIPELINES` for a service that runs these in place of the builtin generate and animate.
STEERABLE_PIPELINES = (
    "generate=benchmarks.testkit.pipelines:ControllableGenerate,"
    "animate=benchmarks.testkit.pipelines:ControllableAnimate"
)
SLEEP = re.compile(r"^\[sleep (\d+(?:\.\d+)?)\]")


class ControllableGenerate:
    operation = "generate"

    def __init__(self) -> None:
        self.real = BuiltinGenerate()

    def run(self, inputs: GenerateInput, control: JobControl) -> ImageOutput:
        if inputs.prompt.startswith("[fail]"):
            raise RuntimeError("asked to fail")
        if inputs.prompt.startswith("[echo-reference]"):
            if not inputs.references:
                raise RuntimeError("no reference to echo")
            echoed = inputs.references[0].convert("RGB").resize((inputs.width, inputs.height))
            return ImageOutput(images=[echoed.copy() for _ in range(inputs.variations)])
        match = SLEEP.match(inputs.prompt)
        if match is None:
            return self.real.run(inputs, control)
        seconds = float(match.group(1))
        deadline = time.monotonic() + seconds
        previews = "[preview]" in inputs.prompt
        try:
            while time.monotonic() < deadline:
                fraction = 1 - (deadline - time.monotonic()) / max(seconds, 1e-9)
                control.progress(fraction)
                if previews:
                    offer_preview(control, partial(_preview_picture, fraction))
                time.sleep(0.02)
            control.progress(1.0)
        except Cancelled:
            _log_cancelled(inputs.prompt)
            raise
        return ImageOutput(
            images=[
                Image.new("RGB", (inputs.width, inputs.height), (index * 60, 90, 160))
                for index in range(inputs.variations)
            ]
        )


def _preview_picture(fraction: float) -> Image.Image:
    return Image.new("RGB", (160, 90), (round(255 * fraction), 90, 160))


def _log_cancelled(prompt: str) -> None:
    path = os.environ.get("SFUMATO_TEST_PIPELINE_LOG")
    if path:
        with open(path, "a") as log:
            log.write(prompt.replace("\n", " ") + "\n")


def cancelled_prompts() -> list[str]:
    """The prompts whose `[sleep S]` a cancel cut short, in this test run's processes."""
    path = os.environ.get("SFUMATO_TEST_PIPELINE_LOG")
    if not path or not os.path.exists(path):
        return []
    with open(path) as log:
        return log.read().splitlines()


def _sleep(seconds: float, control: JobControl) -> None:
    """Take `seconds` in small steps, each a chance to be cancelled."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        control.progress(0.5 * (1 - (deadline - time.monotonic()) / max(seconds, 1e-9)))
        time.sleep(0.02)


class ControllableAnimate:
    """The builtin animate pipeline, after `[sleep S]` seconds when the prompt asks (for tests
    of the video line: which job runs when)."""

    operation = "animate"

    def __init__(self) -> None:
        self.real = BuiltinAnimate()

    def run(self, inputs: AnimateInput, control: JobControl) -> VideoOutput:
        match = SLEEP.match(inputs.prompt)
        if match is not None:
            _sleep(float(match.group(1)), control)
        return self.real.run(inputs, control)
