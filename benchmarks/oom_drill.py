"""The out-of-memory drill: a worker's generate pipeline runs out of device memory and goes on.

    python -m benchmarks.oom_drill --device cuda --models turbo-sized   # on a GPU machine
    python -m benchmarks.oom_drill --device cpu                         # the CPU rehearsal

On CUDA the memory really runs out: a ballast tensor takes all the card's free memory but
`--headroom-gb`, so a batch of four does not fit; the pipeline halves it until it fits (or fails
the job with `OutOfDeviceMemory` when one image does not), the ballast is freed, and the next
job must run. On a CPU the same error (`torch.cuda.OutOfMemoryError`) is raised from the
diffusers call for calls of more than one image, then for every call, as the tests do. Prints
each call's size, what the jobs ended as, and the device memory before and after.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.diffusion_batches import generate_job, registry_for
from pipelines.base import NoControl, OutOfDeviceMemory


def _memory(device: str) -> str:
    if not device.startswith("cuda"):
        return "-"
    import torch

    free, total = torch.cuda.mem_get_info(device)
    return f"{(total - free) / 2**30:.2f} of {total / 2**30:.1f} GiB in use"


def say(line: str) -> None:
    print(line, flush=True)


def drill(device: str, models: str, folder: Path, headroom_gb: float) -> None:
    import torch

    from models.cache import ModelCache
    from models.registry import load_registry
    from models.tuning import Tuning
    from pipelines.diffusion.generate import DiffusionGenerate

    spec = load_registry(registry_for(models, folder, "float16")).spec("generate")
    spec = spec.model_copy(update={"tuning": Tuning(), "batch_limit": 4})
    if models == "tiny":  # the CPU rehearsal: the path matters, not the steps
        spec = spec.model_copy(update={"options": {**spec.options, "steps": 2}})
    injected = {"above": 1 if not device.startswith("cuda") else None}
    calls: list[int] = []

    class Drilled(DiffusionGenerate):
        def invoke(self, pipe: Any, arguments: dict[str, Any]) -> Any:
            calls.append(len(arguments["prompt"]))
            above = injected["above"]
            if above is not None and len(arguments["prompt"]) > above:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected: CPU drill)")
            return super().invoke(pipe, arguments)

    pipeline = Drilled(spec, ModelCache(device=device))
    say(f"loaded; {_memory(device)}")
    batch = [generate_job(index) for index in range(4)]

    def attempt(label: str) -> None:
        calls.clear()
        started = time.perf_counter()
        try:
            results: list[Any] = pipeline.run_batch(batch, [NoControl() for _ in batch])
        except OutOfDeviceMemory as error:  # the batch's call failed: each of its jobs fails
            results = [error] * len(batch)
        ended = [
            type(result).__name__ if isinstance(result, BaseException) else "completed"
            for result in results
        ]
        say(
            f"{label}: calls of {calls} images; jobs {', '.join(ended)} in "
            f"{time.perf_counter() - started:.1f} s; {_memory(device)}"
        )

    ballast = None
    if device.startswith("cuda"):
        free, _ = torch.cuda.mem_get_info(device)
        ballast = torch.empty(
            max(0, free - int(headroom_gb * 2**30)), dtype=torch.uint8, device=device
        )
        say(f"ballast of {ballast.numel() / 2**30:.2f} GiB; {_memory(device)}")
    attempt("batch of 4, memory short")
    if device.startswith("cuda"):
        del ballast
        torch.cuda.empty_cache()
    else:
        injected["above"] = 0
        attempt("batch of 4, no image fits")
        injected["above"] = None
    calls.clear()
    try:
        output = pipeline.run(generate_job(9), NoControl())
        say(f"the next job: {len(output.images)} image, calls {calls}; {_memory(device)}")
    except OutOfDeviceMemory as error:
        say(f"the next job FAILED: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", choices=("tiny", "turbo-sized", "sdxl-sized"), default="tiny")
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--headroom-gb", type=float, default=1.0)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sfumato-oom-") as work:
        folder = arguments.models_dir or Path(work)
        drill(arguments.device, arguments.models, folder, arguments.headroom_gb)


if __name__ == "__main__":
    main()
