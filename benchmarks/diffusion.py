"""`diffusion`: the diffusion generate pipeline on the tiny models: batch throughput, and what
the worker path adds to a direct pipeline call."""

from __future__ import annotations

import io
import os
import statistics
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from benchmarks.diffusion_batches import (
    SIZE,
    TINY_STEPS,
    Timing,
    generate_job,
    median_timing,
    throughput_table,
    timed,
)
from benchmarks.harness import Options
from benchmarks.report import Section, Table, ms, verdict
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.accounts.service import Caller
from core.jobs import service as jobs_service
from core.jobs.contract import GenerateJobInputs
from core.services import Services
from core.settings import Settings
from pipelines.base import GenerateInput, NoControl
from pipelines.diffusion.generate import DiffusionGenerate
from pipelines.registry import PipelineRegistry
from sfumato.processes import asset_semantics
from workers.runner import JobRunner

GOAL_OVERHEAD = 0.05
GOAL_PREVIEWS = 0.02
DIFFUSION_GENERATE = "generate=pipelines.diffusion.generate:DiffusionGenerate"
METHOD = f"""
The real `DiffusionGenerate` on the tiny random-weight Stable Diffusion of `models/testing.py`
(UNet, VAE, CLIP text encoder, DDIM scheduler; built at the start into the run's directory),
{TINY_STEPS} denoising steps at medium quality, 64 px native and resized to {SIZE}x{SIZE}, on the
device `SFUMATO_MODEL_DEVICE` names (`--device`; default CUDA when there is one, else the CPU,
where torch runs one thread: other processes share the cores).
Throughput: `run_batch` with 1, 2 and 4 jobs of one image each (one diffusers call), after a
warm-up call of that size (CPU kernels are prepared per shape); median of the repetitions
(`benchmarks/diffusion_batches.py`, which also runs alone, on a GPU machine without the service).
Worker path: the same job run by `JobRunner.run` in this process (SQLite, local storage, the
image pool's `batch_window_ms` at its default 25 ms, which a lone job waits for companions):
claim, lease keeper, the batcher, the live previews, the pipeline, PNG encoding and storage,
completion and the credit settlement; against `run()` of the pipeline alone on the same input,
alternating, after a warm-up pair; the overhead is the median of the paired differences, in
wall time and in the CPU time of the process (robust to other processes on a shared machine),
and the PNG share of it (encoding the image the direct call made) is shown apart: the tiny
model paints noise, the worst case for PNG. The goal (overhead under {GOAL_OVERHEAD:.0%} of the
call) depends on how long the call is; on a GPU a real model's call is seconds, these tiny
calls are what this machine gives, so the absolute overhead is the figure to carry over.
Live previews: the same job through the worker with previews off and on (the default interval:
each job's first step, then at most one a second; latents to RGB by the family's factors on the
denoising thread, the JPEG and its storage on the publisher's), alternating after a warm-up
pair; the cost is the median of the paired differences (goal: at most {GOAL_PREVIEWS:.0%}).
"""


@dataclass(frozen=True)
class WorkerPath:
    """A job through `JobRunner.run` against the same pipeline's `run()` alone: the medians of
    each, and the medians of the paired differences (each worker run against the direct run
    right after it)."""

    direct: Timing
    worker: Timing
    wall: float
    cpu: float

    @classmethod
    def of(cls, pairs: list[tuple[Timing, Timing]]) -> WorkerPath:
        return cls(
            direct=median_timing([pair[0] for pair in pairs]),
            worker=median_timing([pair[1] for pair in pairs]),
            wall=statistics.median(w.wall - d.wall for d, w in pairs),
            cpu=statistics.median(w.cpu - d.cpu for d, w in pairs),
        )

    def table(self, label: str, runs: int) -> Table:
        direct, worker = self.direct, self.worker
        table = Table([label, "wall (median)", "CPU time (median)", "runs"])
        table.add("pipeline `run()` alone", f"{direct.wall:.3f} s", f"{direct.cpu:.3f} s", runs)
        table.add("worker `JobRunner.run`", f"{worker.wall:.3f} s", f"{worker.cpu:.3f} s", runs)
        table.add(
            "overhead (median of paired differences)",
            f"{ms(self.wall)} ({self.wall / direct.wall:.1%})",
            f"{ms(self.cpu)} ({self.cpu / direct.cpu:.1%})",
            "",
        )
        return table


def run(options: Options) -> Section:
    from models.testing import build_tiny_models

    repetitions = options.scaled(7, 2)
    work = options.work_dir / "diffusion"
    registry = build_tiny_models(work / "models", generate_steps=TINY_STEPS)
    os.environ["SFUMATO_MODELS_FILE"] = str(registry)
    settings = Settings(
        data_dir=work / "data", pipelines=DIFFUSION_GENERATE, config_file=_config_file()
    )
    services = Services.from_settings(settings)
    services.prepare()
    pipelines = PipelineRegistry(settings.pipeline_overrides())
    pipeline = pipelines.get("generate")
    assert isinstance(pipeline, DiffusionGenerate)  # DIFFUSION_GENERATE names it
    device = pipeline.cache.device
    if device == "cpu":
        import torch

        torch.set_num_threads(1)  # spinning OpenMP threads on a shared machine blur the times

    table = throughput_table(pipeline, repetitions)

    pairs = _worker_against_direct(services, pipelines, repetitions)
    measured = WorkerPath.of(pairs)
    direct, wall, cpu = measured.direct, measured.wall, measured.cpu
    image = pipeline.run(generate_job(1), NoControl()).images[0]
    png = median_timing(
        [timed(lambda: image.save(io.BytesIO(), format="PNG", compress_level=3)) for _ in "abc"]
    )
    path = measured.table("path", len(pairs))
    path.add("of which PNG encoding (1K of noise)", ms(png.wall), ms(png.cpu), "")
    rest_wall, rest_cpu = wall - png.wall, cpu - png.cpu
    path.add(
        "the rest: claim, lease, batch window, database",
        f"{ms(rest_wall)} ({rest_wall / direct.wall:.1%})",
        f"{ms(rest_cpu)} ({rest_cpu / direct.cpu:.1%})",
        "",
    )
    off, on, cost, previews_stored = _previews_cost(services, pipelines, repetitions)
    preview_share, preview_cpu_share = cost.wall / off.wall, cost.cpu / off.cpu
    previews_met = max(preview_share, preview_cpu_share) <= GOAL_PREVIEWS
    previews = Table(["live previews", "worker run, wall (median)", "CPU time (median)", "runs"])
    previews.add(
        "off (`preview_seconds = 0`)", f"{off.wall:.3f} s", f"{off.cpu:.3f} s", repetitions
    )
    previews.add(
        f"on (a preview at most every {settings.preview_seconds:g} s)",
        f"{on.wall:.3f} s",
        f"{on.cpu:.3f} s",
        f"{previews_stored} previews stored",
    )
    previews.add(
        "cost (median of paired differences)",
        f"{ms(cost.wall)} ({preview_share:+.1%})",
        f"{ms(cost.cpu)} ({preview_cpu_share:+.1%})",
        f"{repetitions} pairs",
    )
    services.db.dispose()
    share = wall / direct.wall
    return Section(
        "diffusion",
        METHOD + f"\n\nDevice: {device}.",
        [table, path, previews],
        [
            f"worker-path overhead {ms(wall)}, {share:.1%} of a {direct.wall:.2f} s call on "
            f"{device}: goal under {GOAL_OVERHEAD:.0%} {verdict(share < GOAL_OVERHEAD)}. "
            f"{ms(png.wall)} of it is encoding the PNG (the same on any device; a real "
            f"picture compresses faster than this noise), {ms(rest_wall)} the rest "
            f"({rest_wall / direct.wall:.1%}).",
            f"live previews cost {ms(cost.wall)} of a job's wall time ({preview_share:+.1%}) and "
            f"{ms(cost.cpu)} of its CPU time ({preview_cpu_share:+.1%}), "
            f"{previews_stored} previews in {repetitions + 1} jobs: goal at most "
            f"{GOAL_PREVIEWS:.0%} {verdict(previews_met)}.",
            "Batching on the CPU buys little (the CPU is already busy with one image); the "
            'point of batches is a GPU: see "Diffusion batches on a GPU" below.',
        ],
    )


def worker_runner(
    services: Services, pipelines: PipelineRegistry, email: str
) -> tuple[JobRunner, Caller]:
    """A job runner as a worker builds it, and a caller (a fresh account) to create jobs as."""
    from core.jobs.lifecycle import JobLifecycle

    runner = JobRunner(services, pipelines, asset_semantics(), JobLifecycle.for_services(services))
    accounts.create_account(services.db, email, "pro", 1_000_000)
    key = api_keys.create_key(services.db, email, "bench", None).plaintext
    caller = authentication.authenticate(services.db, key)
    assert caller is not None
    return runner, caller


def _worker_against_direct(
    services: Services, pipelines: PipelineRegistry, repetitions: int
) -> list[tuple[Timing, Timing]]:
    """(direct, worker) timings of the same job, the first pair (a warm-up) left out."""

    runner, caller = worker_runner(services, pipelines, "bench@diffusion.local")
    pipeline = pipelines.get("generate")
    pairs: list[tuple[Timing, Timing]] = []
    for index in range(repetitions + 1):
        job_input = generate_job(100 + index)
        worker = _worker_run(services, runner, caller, job_input)
        direct = timed(partial(pipeline.run, job_input, NoControl()))
        if index:
            pairs.append((direct, worker))
    return pairs


def _worker_run(
    services: Services, runner: JobRunner, caller: Caller, job_input: GenerateInput
) -> Timing:
    """A pending job of `job_input` made and run to completion by the worker, timed."""
    from core.tables import JobRow

    job, _ = jobs_service.insert_pending(
        services.db,
        caller,
        jobs_service.NewJob(
            type="image.generate",
            operation="generate",
            queue="image",
            inputs=GenerateJobInputs(
                prompt=job_input.prompt,
                aspect_ratio="1:1",
                quality="medium",
                resolution="1K",
                variations=1,
                width=SIZE,
                height=SIZE,
            ).stored(),
            price=1,
        ),
    )
    timing = timed(partial(runner.run, job.id))
    with services.db.read() as session:
        stored = session.get(JobRow, job.id)
        assert stored is not None and stored.status == "completed", stored
    return timing


def _previews_cost(
    services: Services, pipelines: PipelineRegistry, repetitions: int
) -> tuple[Timing, Timing, Timing, int]:
    """The same job through the worker without live previews and with them (at the service's
    interval), alternating after a warm-up pair: the medians of each, the medians of the paired
    differences (wall and CPU time), and how many previews were stored."""
    runner, caller = worker_runner(services, pipelines, "bench-previews@diffusion.local")
    interval = services.settings.preview_seconds
    pairs: list[tuple[Timing, Timing]] = []
    for index in range(repetitions + 1):
        runner.previews.interval_seconds = 0.0
        off = _worker_run(services, runner, caller, generate_job(300 + index))
        runner.previews.interval_seconds = interval
        on = _worker_run(services, runner, caller, generate_job(300 + index))
        if index:
            pairs.append((off, on))
    return (
        median_timing([pair[0] for pair in pairs]),
        median_timing([pair[1] for pair in pairs]),
        Timing(
            statistics.median(on.wall - off.wall for off, on in pairs),
            statistics.median(on.cpu - off.cpu for off, on in pairs),
        ),
        runner.previews.stored,
    )


def _config_file() -> Path:
    return Path(__file__).with_name("generous.toml")
