"""The diffusion generate pipeline's batch throughput: one diffusers call of 1, 2 and 4 jobs.

The `diffusion` benchmark's first table, and a command of its own, because it needs only the
pipelines and the models (no database, broker or storage): it also runs on a GPU machine that
has torch and diffusers but not the service.

    python -m benchmarks.diffusion_batches --device cuda --models turbo-sized \
        --dtype float16 bfloat16

`--models tiny` is the tiny random-weight Stable Diffusion of `models/testing.py` (20 steps at
64 px); `turbo-sized` is SD-Turbo's architecture at full size with random weights
(`build_turbo_sized`), run as the `sd-turbo` preset runs (2 steps at 512 px, no guidance): a
real model's work per image where its weights cannot be fetched.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.report import Table
from pipelines.base import GenerateInput, NoControl

BATCH_SIZES = (1, 2, 4)
TINY_STEPS = 20
SIZE = 1024  # the contract's smallest square (1K); both models paint smaller and are resized
PROMPT = "a lighthouse on a cliff at dusk"


@dataclass(frozen=True)
class Timing:
    """Wall time, and the CPU time of this whole process (all its threads): other processes on
    a shared machine stretch the first but hardly the second."""

    wall: float
    cpu: float


def timed(action: Callable[[], object]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


def median_timing(timings: list[Timing]) -> Timing:
    return Timing(
        statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings)
    )


def generate_job(index: int) -> GenerateInput:
    return GenerateInput(prompt=f"{PROMPT} {index}", width=SIZE, height=SIZE, seed=index)


@contextmanager
def diffusers_calls_timed(*owners: Any) -> Iterator[list[float]]:
    """The wall time of each diffusers call made through the owners' `invoke` (a diffusion
    pipeline's, a video model's) while the block runs; their own `invoke` again after it."""
    seconds: list[float] = []
    wrapped: list[tuple[Any, Any]] = []  # each owner with its own instance-level invoke, if any

    def timing(real: Any) -> Any:
        def timed_invoke(pipe: Any, arguments: dict[str, Any]) -> Any:
            started = time.perf_counter()
            try:
                return real(pipe, arguments)
            finally:
                seconds.append(time.perf_counter() - started)

        return timed_invoke

    try:
        for owner in dict.fromkeys(owners):  # an owner named twice is timed once
            own = owner.__dict__.get("invoke")
            owner.invoke = timing(owner.invoke)
            wrapped.append((owner, own))
        yield seconds
    finally:
        for owner, own in wrapped:
            if own is None:
                del owner.invoke
            else:
                owner.invoke = own


def throughput_table(pipeline: Any, repetitions: int) -> Table:
    """`run_batch` of 1, 2 and 4 jobs of one image each (one diffusers call), each size after a
    warm-up call of that size (kernels are prepared per shape); medians of `repetitions`. Of
    each call, the diffusers call alone (`invoke`: text encoding, the steps, the VAE, the
    pictures; the rest is the pipeline's own work, such as scaling to the asked size), and on
    CUDA the device memory the call peaked at (weights included: what torch allocated, and what
    its allocator held from the card)."""
    device = pipeline.cache.device
    table = Table(
        [
            "jobs per call",
            "call, wall (median)",
            "images per second",
            "call, CPU time",
            "vs one job",
            "of which the diffusers call",
            "peak device memory (allocated / reserved)",
        ]
    )
    single = 0.0
    with diffusers_calls_timed(pipeline) as diffusers_seconds:
        for size in BATCH_SIZES:
            batch = [generate_job(index) for index in range(size)]
            controls = [NoControl() for _ in batch]
            pipeline.run_batch(batch, controls)
            call = partial(pipeline.run_batch, batch, controls)
            _reset_peak(device)
            timings, diffusers_times = [], []
            for _ in range(repetitions):
                diffusers_seconds.clear()
                timings.append(timed(call))
                diffusers_times.append(sum(diffusers_seconds))
            timing = median_timing(timings)
            single = single or timing.wall
            table.add(
                size,
                f"{timing.wall:.3f} s",
                f"{size / timing.wall:.2f}",
                f"{timing.cpu:.3f} s",
                f"{single * size / timing.wall:.2f}x",
                f"{statistics.median(diffusers_times):.3f} s",
                _peak(device),
            )
    return table


def _reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats(device)


def _peak(device: str) -> str:
    if not device.startswith("cuda"):
        return "-"
    import torch

    allocated = torch.cuda.max_memory_allocated(device) / 2**30
    reserved = torch.cuda.max_memory_reserved(device) / 2**30
    return f"{allocated:.2f} / {reserved:.2f} GiB"


def registry_for(kind: str, folder: Path, dtype: str) -> Path:
    """The registry file of `kind`'s models under `folder` (built there by the first call),
    generating in `dtype`."""
    from models.testing import build_tiny_models, build_turbo_sized, write_tiny_registry

    if kind == "turbo-sized":
        return build_turbo_sized(folder, dtype)
    tiny = folder / "tiny"
    if not (tiny / "models.toml").exists():
        build_tiny_models(tiny, generate_steps=TINY_STEPS)
    return write_tiny_registry(tiny, TINY_STEPS, dtype)


def device_summary(device: str) -> str:
    import diffusers
    import torch

    if device.startswith("cuda"):
        where = torch.cuda.get_device_name(device)
    else:
        where = f"CPU ({platform.machine()}, {torch.get_num_threads()} threads)"
    return f"{where}; torch {torch.__version__}, diffusers {diffusers.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 (default: auto)")
    parser.add_argument("--models", choices=("tiny", "turbo-sized"), default="tiny")
    parser.add_argument("--dtype", nargs="+", default=["float32"])
    parser.add_argument("--repetitions", type=int, default=5)
    arguments = parser.parse_args()
    from models.cache import ModelCache
    from models.device import free_device_memory
    from models.registry import load_registry
    from pipelines.diffusion.generate import DiffusionGenerate

    with tempfile.TemporaryDirectory(prefix="sfumato-batches-") as work:
        for dtype in arguments.dtype:
            registry = registry_for(arguments.models, Path(work), dtype)
            cache = ModelCache(device=arguments.device)
            started = time.perf_counter()
            pipeline = DiffusionGenerate(spec=load_registry(registry).spec("generate"), cache=cache)
            loaded = time.perf_counter() - started
            print(
                f"\n{arguments.models} models, {dtype}, {device_summary(cache.device)}; "
                f"loaded in {loaded:.1f} s; {SIZE}x{SIZE} images, "
                f"{arguments.repetitions} repetitions\n"
            )
            print(throughput_table(pipeline, arguments.repetitions).markdown(), flush=True)
            del pipeline, cache
            free_device_memory()


if __name__ == "__main__":
    main()
