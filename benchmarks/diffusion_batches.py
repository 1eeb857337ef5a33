"""The diffusion generate pipeline's batch throughput: one diffusers call of 1, 2 and 4 jobs.

The `diffusion` benchmark's first table, and a command of its own, because it needs only the
pipelines and the models (no database, broker or storage): it also runs on a GPU machine that
has torch and diffusers but not the service.

    python -m benchmarks.diffusion_batches --device cuda --models turbo-sized \
        --dtype float16 bfloat16 [--tuning preset] [--previews every-step] [--bare]

`--models tiny` is the tiny random-weight Stable Diffusion of `models/testing.py` (20 steps at
64 px); `turbo-sized` is SD-Turbo's architecture at full size with random weights
(`build_turbo_sized`), run as the `sd-turbo` preset runs (2 steps at 512 px, no guidance): a
real model's work per image where its weights cannot be fetched; `sdxl-sized` likewise SDXL
base 1.0 (`build_sdxl_sized`, the `sdxl` preset: 30 steps at 1024 px with guidance).
`--tuning none` runs eager and untuned; `preset` applies the preset's `tuning` table (channels-
last, fused QKV, torch.compile: each batch size compiled by its warm-up call, as a worker's
warm-up does; on a CPU only with `--compile-on-cpu`). `--previews every-step` shows a live
preview of each job at every step (the worker's latent preview and JPEG, the worst case: the
worker shows one a second). `--bare` times the bare diffusers call of the same batch beside
the pipeline's (the worker's own work on top of diffusers).
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
from models.tuning import warming
from pipelines.base import GenerateInput, NoControl
from pipelines.diffusion.generate import TEXT_TO_IMAGE

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


class PreviewEveryStep:
    """A job control that is shown a preview at every step and does what the worker does with
    it (the JPEG; the worker writes it on another thread): the cost of previews at worst."""

    def __init__(self) -> None:
        self.shown = 0

    def progress(self, fraction: float, message: str | None = None) -> None:
        return None

    def wants_preview(self) -> bool:
        return True

    def preview(self, image: Any) -> None:
        from workers.previews import preview_jpeg

        preview_jpeg(image)
        self.shown += 1


def bare_call(pipeline: Any, batch: list[GenerateInput]) -> Callable[[], object]:
    """The diffusers call the pipeline makes for `batch`, made bare: the same loaded pipeline,
    arguments, generators and size, without the pipeline's callbacks, batching or resizing."""
    from pipelines.diffusion.device import generator_for
    from pipelines.diffusion.generate import TEXT_TO_IMAGE
    from pipelines.diffusion.presets import native_size, quality_settings, size_multiple

    spec = pipeline.spec
    steps, guidance = quality_settings(spec, batch[0].quality)

    def call() -> object:
        with pipeline.cache.pipeline_for(spec, TEXT_TO_IMAGE) as pipe:
            width, height = native_size(spec, SIZE, SIZE, size_multiple(pipe))
            return pipe(
                prompt=[job.prompt for job in batch],
                generator=[generator_for(job.seed, pipeline.cache.device) for job in batch],
                num_inference_steps=steps,
                guidance_scale=guidance,
                width=width,
                height=height,
            )

    return call


def throughput_table(
    pipeline: Any,
    repetitions: int,
    batch_sizes: tuple[int, ...] = BATCH_SIZES,
    control: Callable[[], Any] = NoControl,
    bare: bool = False,
) -> Table:
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
        + (["bare diffusers call", "pipeline over bare"] if bare else [])
    )
    single = 0.0
    with diffusers_calls_timed(pipeline) as diffusers_seconds:
        for size in batch_sizes:
            batch = [generate_job(index) for index in range(size)]
            controls = [control() for _ in batch]
            with pipeline.cache.pipeline_for(pipeline.spec, TEXT_TO_IMAGE) as pipe, warming(pipe):
                pipeline.run_batch(batch, controls)  # compiles this shape, where compiled
            call = partial(pipeline.run_batch, batch, controls)
            bare_batch = bare_call(pipeline, batch)
            _reset_peak(device)
            timings, diffusers_times, bare_times = [], [], []
            for _ in range(repetitions):
                diffusers_seconds.clear()
                timings.append(timed(call))
                diffusers_times.append(sum(diffusers_seconds))
                if bare:
                    bare_times.append(timed(bare_batch))
            timing = median_timing(timings)
            single = single or timing.wall
            row = [
                size,
                f"{timing.wall:.3f} s",
                f"{size / timing.wall:.2f}",
                f"{timing.cpu:.3f} s",
                f"{single * size / timing.wall:.2f}x",
                f"{statistics.median(diffusers_times):.3f} s",
                _peak(device),
            ]
            if bare:
                plain = median_timing(bare_times).wall
                row += [f"{plain:.3f} s", f"{(timing.wall - plain) / plain:+.1%}"]
            table.add(*row)
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
    from models.testing import (
        build_sdxl_sized,
        build_tiny_models,
        build_turbo_sized,
        write_tiny_registry,
    )

    if kind == "turbo-sized":
        return build_turbo_sized(folder / "turbo", dtype)
    if kind == "sdxl-sized":
        return build_sdxl_sized(folder / "sdxl", dtype)
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
    parser.add_argument("--models", choices=("tiny", "turbo-sized", "sdxl-sized"), default="tiny")
    parser.add_argument("--dtype", nargs="+", default=["float32"])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCH_SIZES))
    parser.add_argument("--tuning", choices=("none", "preset"), default="none")
    parser.add_argument("--compile-on-cpu", action="store_true")
    parser.add_argument("--previews", choices=("off", "every-step"), default="off")
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--steps", type=int, help="replace the model's steps (a dry run's 2)")
    parser.add_argument("--models-dir", type=Path, help="keep the built models here (reused)")
    arguments = parser.parse_args()
    from models.cache import ModelCache
    from models.device import free_device_memory
    from models.registry import load_registry
    from models.tuning import Tuning
    from pipelines.diffusion.generate import DiffusionGenerate

    with tempfile.TemporaryDirectory(prefix="sfumato-batches-") as work:
        folder = arguments.models_dir or Path(work)
        for dtype in arguments.dtype:
            registry = registry_for(arguments.models, folder, dtype)
            spec = load_registry(registry).spec("generate")
            if arguments.tuning == "none":
                spec = spec.model_copy(update={"tuning": Tuning()})
            elif arguments.models == "tiny":  # the tiny registry has no preset: the usual table
                tuning = Tuning(compile="denoiser", channels_last=True, fuse_qkv=True)
                spec = spec.model_copy(update={"tuning": tuning})
            if arguments.steps:
                spec = spec.model_copy(
                    update={"options": {**spec.options, "steps": arguments.steps}}
                )
            if arguments.compile_on_cpu:
                spec = spec.model_copy(
                    update={"tuning": spec.tuning.model_copy(update={"cpu": True})}
                )
            cache = ModelCache(device=arguments.device)
            started = time.perf_counter()
            pipeline = DiffusionGenerate(spec=spec, cache=cache)
            loaded = time.perf_counter() - started
            control = PreviewEveryStep if arguments.previews == "every-step" else NoControl
            print(
                f"\n{arguments.models} models, {dtype}, {device_summary(cache.device)}; "
                f"loaded in {loaded:.1f} s; tuning {arguments.tuning} "
                f"({spec.tuning.model_dump(exclude_defaults=True) or 'none'}); previews "
                f"{arguments.previews}; {SIZE}x{SIZE} images, "
                f"{arguments.repetitions} repetitions\n"
            )
            table = throughput_table(
                pipeline, arguments.repetitions, tuple(arguments.batches), control, arguments.bare
            )
            print(table.markdown(), flush=True)
            del pipeline, cache
            free_device_memory()


if __name__ == "__main__":
    main()
