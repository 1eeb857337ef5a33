"""One builtin pipeline run in a fresh interpreter, for `images` and `videos`:

    python -m benchmarks.pipeline_run '{"operation": "generate", "width": 1024, ...}'

prints one JSON line: the wall time of `run()` and the peak memory of this process and of the
helper processes it started (the super-resolution pool of upscale and reframe).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from PIL import Image

from benchmarks.measures import child_pids, peak_rss_mib
from benchmarks.testkit.processes import REPO
from pipelines.base import (
    AnimateInput,
    EditInput,
    GenerateInput,
    ImageOutput,
    NoControl,
    ReframeInput,
    TransitionInput,
    UpscaleInput,
    VideoOutput,
)
from pipelines.builtin.animate import BuiltinAnimate
from pipelines.builtin.edit import BuiltinEdit
from pipelines.builtin.generate import BuiltinGenerate
from pipelines.builtin.reframe import BuiltinReframe
from pipelines.builtin.transition import BuiltinTransition
from pipelines.builtin.upscale import BuiltinUpscale


@dataclass(frozen=True)
class RunResult:
    seconds: float
    # VmHWM of the process that called `run()`.
    main_peak_mib: float
    # Helpers still alive after the run (a pool stays up for the next job), and the sum of
    # their VmHWM: their peaks need not coincide, so the sum is an upper bound.
    live_helpers: int
    live_helpers_peak_mib: float
    # Helpers that already ended: getrusage tells only the largest one's peak.
    largest_ended_helper_peak_mib: float

    @property
    def total_peak_mib(self) -> float:
        """An upper bound of the run's memory, all its processes together."""
        return self.main_peak_mib + self.live_helpers_peak_mib + self.largest_ended_helper_peak_mib


def _image(path: str) -> Image.Image:
    with Image.open(path) as opened:
        return opened.convert("RGB")


def _prepared(spec: dict[str, Any]) -> Callable[[], ImageOutput | VideoOutput]:
    """The pipeline constructed (a worker does it at start-up, so it is not timed) and its
    inputs read, ready to run."""
    operation = spec["operation"]
    width, height = spec["width"], spec["height"]
    control = NoControl()
    if operation == "generate":
        generate = BuiltinGenerate()
        inputs = GenerateInput(spec["prompt"], width, height, quality=spec["quality"])
        return lambda: generate.run(inputs, control)
    if operation == "edit":
        edit = BuiltinEdit()
        edit_inputs = EditInput(spec["prompt"], _image(spec["source"]))
        return lambda: edit.run(edit_inputs, control)
    if operation == "reframe":
        reframe = BuiltinReframe()
        reframe_inputs = ReframeInput(_image(spec["source"]), width, height)
        return lambda: reframe.run(reframe_inputs, control)
    if operation == "upscale":
        upscale = BuiltinUpscale()
        upscale_inputs = UpscaleInput(_image(spec["source"]), width, height)
        return lambda: upscale.run(upscale_inputs, control)
    if operation == "animate":
        animate = BuiltinAnimate()
        animate_inputs = AnimateInput(
            _image(spec["source"]),
            spec["prompt"],
            spec["duration"],
            width,
            height,
            audio=True,
            output_path=spec["output"],
        )
        return lambda: animate.run(animate_inputs, control)
    if operation == "transition":
        transition = BuiltinTransition()
        transition_inputs = TransitionInput(
            _image(spec["source"]),
            _image(spec["end"]),
            spec["prompt"],
            spec["duration"],
            width,
            height,
            audio=True,
            output_path=spec["output"],
        )
        return lambda: transition.run(transition_inputs, control)
    raise ValueError(f"no operation {operation}")


def measure(spec: dict[str, Any]) -> RunResult:
    run = _prepared(spec)
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    live = [peak_rss_mib(pid) for pid in child_pids(os.getpid())]
    return RunResult(
        seconds=seconds,
        main_peak_mib=peak_rss_mib(os.getpid()),
        live_helpers=len(live),
        live_helpers_peak_mib=sum(live),
        # ru_maxrss is in KiB on Linux.
        largest_ended_helper_peak_mib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    )


def run_in_fresh_process(spec: dict[str, Any]) -> RunResult:
    """`measure(spec)` in a new interpreter, so that its peaks are this run's alone."""
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.pipeline_run", json.dumps(spec)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{spec['operation']} failed:\n{completed.stderr[-3000:]}")
    return RunResult(**json.loads(completed.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    print(json.dumps(asdict(measure(json.loads(sys.argv[1])))))
