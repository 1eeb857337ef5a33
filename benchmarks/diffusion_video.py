"""`diffusion_video`: the diffusion animate and transition pipelines on the tiny Wan models: where
a clip's time goes, and what the worker path adds to a direct pipeline call."""

from __future__ import annotations

import io
import os
import statistics
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from PIL import Image

from benchmarks.diffusion import WorkerPath, worker_runner
from benchmarks.diffusion_batches import Timing, diffusers_calls_timed, median_timing, timed
from benchmarks.harness import Options
from benchmarks.report import Section, Table, ms
from core.jobs import service as jobs_service
from core.jobs.contract import AnimateJobInputs, InputImage
from core.services import Services
from core.settings import Settings
from pipelines.base import AnimateInput, NoControl, TransitionInput
from pipelines.registry import PipelineRegistry

WIDTH, HEIGHT = 848, 480  # 480p at 16:9
DIFFUSION_VIDEO = (
    "animate=pipelines.diffusion.animate:DiffusionAnimate,"
    "transition=pipelines.diffusion.transition:DiffusionTransition"
)
METHOD = f"""
The real `DiffusionAnimate` and `DiffusionTransition` on the tiny random-weight Wan 2.1 models of
`models/testing_video.py` (`WanImageToVideoPipeline` as image-to-video and as first-last-frame:
UMT5 text encoder, CLIP image encoder, Wan transformer and VAE; built at the start into the
run's directory), 2 denoising steps, 8 fps, at most 9 frames a call, 32-48 px native, on the
device `SFUMATO_MODEL_DEVICE` names (`--device`). Each clip is {WIDTH}x{HEIGHT} (480p, 16:9),
with audio. "Model calls" is the time inside the diffusers calls; the rest is the pipeline's
own work: RIFE retiming to 24 fps (on the CPU), scaling, the soundtrack and x264 encoding.
Worker path: a 1 s animate job run by `JobRunner.run` in this process (SQLite, local storage):
claim, lease keeper, reading the image from storage, the pipeline, storing the MP4, completion,
and the JPEG poster; against the pipeline's `run()` alone on the same input and seed, after a
warm-up pair, which of the two goes first alternating; median of the paired differences, in wall
and CPU time. With real models a call takes minutes on a GPU, so the absolute overhead is the
figure to carry over.
"""


def _still(colour: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (WIDTH, HEIGHT), colour)


def run(options: Options) -> Section:
    from models.testing_video import build_tiny_video_models

    repetitions = options.scaled(4, 2)
    work = options.work_dir / "diffusion_video"
    models = work / "models"
    models.mkdir(parents=True)
    registry = models / "models.toml"
    registry.write_text(build_tiny_video_models(models))
    os.environ["SFUMATO_MODELS_FILE"] = str(registry)
    generous = Path(__file__).with_name("generous.toml")
    settings = Settings(data_dir=work / "data", pipelines=DIFFUSION_VIDEO, config_file=generous)
    services = Services.from_settings(settings)
    services.prepare()
    pipelines = PipelineRegistry(settings.pipeline_overrides())
    # They import torch: only when run.
    from pipelines.diffusion.animate import DiffusionAnimate
    from pipelines.diffusion.transition import DiffusionTransition

    animate, transition = pipelines.get("animate"), pipelines.get("transition")
    # DIFFUSION_VIDEO names them.
    assert isinstance(animate, DiffusionAnimate) and isinstance(transition, DiffusionTransition)
    device = animate.model.cache.device
    if device == "cpu":
        import torch

        torch.set_num_threads(1)  # as the diffusion benchmark: steadier times on a shared machine
    start, end = _still((200, 60, 40)), _still((30, 60, 200))
    output = str(work / "clip.mp4")
    animation = partial(AnimateInput, start, "waves", width=WIDTH, height=HEIGHT)
    joining = TransitionInput(start, end, "dusk", 6, WIDTH, HEIGHT, output_path=output)
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("animate 1 s", partial(animate.run, animation(1, output_path=output), NoControl())),
        (
            "animate 6 s (6 segments)",
            partial(animate.run, animation(6, output_path=output), NoControl()),
        ),
        ("transition 6 s (stretched)", partial(transition.run, joining, NoControl())),
    ]
    clips = Table(["clip", "total, wall (median)", "model calls", "the rest", "total, CPU time"])
    with diffusers_calls_timed(animate.model, transition.model) as model_seconds:
        for name, case in cases:
            case()  # warm-up: CPU kernels are prepared per shape
            totals, models_time = [], []
            for _ in range(repetitions):
                model_seconds.clear()
                totals.append(timed(case))
                models_time.append(sum(model_seconds))
            total, model = median_timing(totals), statistics.median(models_time)
            clips.add(
                name,
                f"{total.wall:.2f} s",
                f"{model:.2f} s",
                f"{total.wall - model:.2f} s",
                f"{total.cpu:.2f} s",
            )
    pairs = _worker_against_direct(services, pipelines, repetitions)
    measured = WorkerPath.of(pairs)
    direct, wall, cpu = measured.direct, measured.wall, measured.cpu
    path = measured.table("path (1 s animate)", len(pairs))
    services.db.dispose()
    return Section(
        "diffusion_video",
        METHOD + f"\n\nDevice: {device}.",
        [clips, path],
        [
            f"worker path over a 1 s animate on {device}: {ms(cpu)} of CPU time "
            f"({cpu / direct.cpu:.1%} of a {direct.cpu:.2f} s call), {ms(wall)} wall; it reads "
            "the image, stores the MP4 and makes the poster."
        ],
    )


def _worker_against_direct(
    services: Services, pipelines: PipelineRegistry, repetitions: int
) -> list[tuple[Timing, Timing]]:
    """(direct, worker) timings of the same 1 s animate, the first pair (a warm-up) left out."""
    from core.tables import JobRow

    runner, caller = worker_runner(services, pipelines, "bench@video.local")
    image = _still((120, 140, 60))
    png = io.BytesIO()
    image.save(png, format="PNG")
    services.storage.put_bytes("references/bench.png", png.getvalue(), "image/png")
    animate = pipelines.get("animate")
    direct_path = str(services.settings.data_dir / "direct.mp4")
    pairs: list[tuple[Timing, Timing]] = []
    for index in range(repetitions + 1):
        inputs = AnimateJobInputs(
            image=InputImage(
                media_id="bench",
                key="references/bench.png",
                content_type="image/png",
                width=image.width,
                height=image.height,
            ),
            prompt=f"waves {index}",
            duration=1,
            resolution="480p",
            audio=True,
            width=WIDTH,
            height=HEIGHT,
        )
        job, _ = jobs_service.insert_pending(
            services.db,
            caller,
            jobs_service.NewJob(
                type="video.generate",
                operation="animate",
                queue="video",
                inputs=inputs.stored(),
                price=1,
            ),
        )
        request = AnimateInput(
            image, inputs.prompt, 1, WIDTH, HEIGHT, seed=job.seed, output_path=direct_path
        )
        # Alternate which goes first: the second of a pair runs on warmer caches.
        if index % 2:
            direct = timed(partial(animate.run, request, NoControl()))
            worker = timed(partial(runner.run, job.id))
        else:
            worker = timed(partial(runner.run, job.id))
            direct = timed(partial(animate.run, request, NoControl()))
        with services.db.read() as session:
            stored = session.get(JobRow, job.id)
            assert stored is not None and stored.status == "completed", stored
        if index:
            pairs.append((direct, worker))
    return pairs
