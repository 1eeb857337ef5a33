"""`model_load`: how fast a worker loads a model from disk, against the disk's own read rate."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from benchmarks.harness import Options
from benchmarks.report import Section, Table

CHUNK = 8 * 2**20
METHOD = """
`models.loading.load_pipeline_timed`, as a worker's model cache loads an entry: each weighted
component (UNet, VAE, text encoder) read from its safetensors straight onto the device in the
entry's dtype (`device_map`; on a CPU weights published in fp16 load as float32, see
docs/models.md), then the pipeline assembled around them. Models: the tiny random-weight
Stable Diffusion of `models/testing.py` and SD-Turbo's architecture at full size with random
weights (`build_turbo_sized`: fp16 files of 2.6 GB, as `sfumato models pull sd-turbo` lays them
out), both built into the run's directory first. Cold: every file of the model dropped from
the page cache first (`posix_fadvise(DONTNEED)`, which needs no privileges), so the weights
come from the disk; warm: loaded again at once, from the page cache. The disk's own rate:
the model's largest weight file, dropped from the cache, then read through in 8 MiB blocks, in
the same run just before the cold load. Bytes per second: the model's weight files' size over
the load's wall time (the pipeline's other files are a few KB). Medians of the repetitions.
"""


def drop_from_page_cache(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)  # only written-back pages can be dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def disk_read_rate(path: Path) -> float:
    """Bytes per second reading `path` from the disk (dropped from the page cache first)."""
    drop_from_page_cache(path.parent)
    started = time.perf_counter()
    read = 0
    with open(path, "rb", buffering=0) as file:
        while chunk := file.read(CHUNK):
            read += len(chunk)
    return read / (time.perf_counter() - started)


def weight_files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*.safetensors") if path.is_file()]


def _rate(bytes_: int, seconds: float) -> str:
    return f"{bytes_ / seconds / 2**20:,.0f} MiB/s"


def run(options: Options) -> Section:
    from models.loading import load_pipeline_timed
    from models.registry import load_registry
    from models.testing import build_tiny_models, build_turbo_sized

    repetitions = options.scaled(3, 1)
    work = options.work_dir / "model_load"
    models = {
        "tiny (sd15)": load_registry(build_tiny_models(work / "tiny")).spec("generate"),
        "SD-Turbo-sized": load_registry(build_turbo_sized(work / "turbo")).spec("generate"),
    }
    table = Table(
        [
            "model",
            "weights",
            "disk read rate",
            "cold load (median)",
            "cold rate",
            "warm load (median)",
            "warm rate",
            "per component (cold)",
        ]
    )
    findings = []
    device = "cpu"
    for label, spec in models.items():
        files = weight_files(spec.folder)
        size = sum(path.stat().st_size for path in files)
        disk = statistics.median(
            disk_read_rate(max(files, key=lambda p: p.stat().st_size)) for _ in range(repetitions)
        )
        cold, warm, components = [], [], ""
        for _ in range(repetitions):
            drop_from_page_cache(spec.folder)
            pipe, times = load_pipeline_timed(spec, device)
            cold.append(times.total)
            components = ", ".join(f"{name} {s:.2f} s" for name, s in times.components.items())
            del pipe
            pipe, times = load_pipeline_timed(spec, device)
            warm.append(times.total)
            del pipe
        cold_s, warm_s = statistics.median(cold), statistics.median(warm)
        table.add(
            label,
            f"{size / 2**20:,.0f} MiB",
            f"{disk / 2**20:,.0f} MiB/s",
            f"{cold_s:.2f} s",
            _rate(size, cold_s),
            f"{warm_s:.2f} s",
            _rate(size, warm_s),
            components,
        )
        findings.append(
            f"{label}: a cold load reads its {size / 2**20:,.0f} MiB at "
            f"{size / cold_s / disk:.0%} of the disk's own rate; warm, from the page cache, in "
            f"{warm_s:.2f} s."
        )
    return Section(
        "model_load",
        METHOD + f"\n\nDevice: {device} (no GPU on this machine).",
        [table],
        findings,
    )
