"""`images`: wall time and peak memory of each builtin image operation, called directly."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from PIL import Image

from benchmarks.harness import Options
from benchmarks.pipeline_run import RunResult, run_in_fresh_process
from benchmarks.report import Section, Table, verdict
from core.sizes import image_size
from pipelines.base import GenerateInput, NoControl
from pipelines.builtin.generate import BuiltinGenerate

GENERATE_PROMPT = "a misty mountain lake at dawn, pine forest, soft golden light"
# A first prompt with subjects: glyphs drawn from vectors, a place, a relation, a colour.
SUBJECTS_PROMPT = "a red bicycle leaning against a brick wall, a cat on a chair beside it"
EDIT_PROMPT = "make it warmer and add grain"
REFRAME_RATIOS = ("16:9", "21:9")
GOAL_GENERATE_1K_SECONDS = 1.5
GOAL_UPSCALE_4K_SECONDS = 20.0
GOAL_REFRAME_1K_SECONDS = 1.0
METHOD = f"""
Each builtin image pipeline called directly (no service, no queue), with a control whose `progress`
does nothing. Every measurement is a fresh `python -m benchmarks.pipeline_run` process: it
constructs the pipeline (as a worker does at start-up; not timed), reads its source image, then
times one `run()`. Sizes come from `core.sizes.image_size`. Generate: prompt "{GENERATE_PROMPT}",
1:1, quality medium, and with subjects "{SUBJECTS_PROMPT}" (the glyph set and the sentence model
are loaded when the pipeline is constructed, as a worker does). The 1:1 source of the other
operations is that generation at 1K; edit ("{EDIT_PROMPT}") works at its source's size, so at 2K
and 4K its source is the 1K image enlarged with Lanczos first; reframe turns the 1:1 1K source into
16:9 and 21:9 at each resolution; upscale enlarges it to 2K and 4K (1:1). Peak memory: the VmHWM of
the measuring process, plus that of each helper process still alive after the run (upscale, and
reframe when it enlarges, start a pool of Real-ESRGAN processes that stays up for the next job; the
count includes multiprocessing's resource tracker), plus the largest ended helper
(`getrusage(RUSAGE_CHILDREN)`, none in practice). Adding the helpers' peaks is an upper bound: they
need not peak at once. A first run in a fresh process also pays for starting the pool, which a warm
worker pays once. Time is the median of the repetitions, peak the largest. Goals on this machine:
generate 1K under {GOAL_GENERATE_1K_SECONDS:g} s at medium quality, upscale to 4K under
{GOAL_UPSCALE_4K_SECONDS:g} s, reframe 1K under {GOAL_REFRAME_1K_SECONDS:g} s.
"""


def run(options: Options) -> Section:
    repetitions = options.scaled(3, 1)
    resolutions = options.scaled(("1K", "2K", "4K"), ("1K",))
    work = options.work_dir / "images"
    work.mkdir()
    source = work / "source-1K.png"
    _generated("1:1", "1K").save(source)
    cases: list[tuple[str, str, str, dict[str, Any]]] = []
    for resolution in resolutions:
        width, height = image_size("1:1", resolution)
        generate = {"prompt": GENERATE_PROMPT, "quality": "medium"}
        cases.append(
            ("generate", "1:1", resolution, {**generate, "width": width, "height": height})
        )
        subjects = {"prompt": SUBJECTS_PROMPT, "quality": "medium"}
        cases.append(
            (
                "generate",
                "1:1, subjects",
                resolution,
                {**subjects, "width": width, "height": height},
            )
        )
        edit_source = _at_size(source, width, height, work)
        edit = {"prompt": EDIT_PROMPT, "source": str(edit_source), "width": width, "height": height}
        cases.append(("edit", "1:1", resolution, edit))
        for ratio in REFRAME_RATIOS:
            reframe_width, reframe_height = image_size(ratio, resolution)
            reframe = {"source": str(source), "width": reframe_width, "height": reframe_height}
            cases.append(("reframe", f"1:1 to {ratio}", resolution, reframe))
        if resolution != "1K":
            upscale = {"source": str(source), "width": width, "height": height}
            cases.append(("upscale", "1:1 from 1K", resolution, upscale))
    section = Section("images", METHOD)
    table = Table(
        [
            "operation",
            "shape",
            "resolution",
            "pixels",
            "runs",
            "wall time (median)",
            "peak, measuring process",
            "helpers",
            "peak, all processes (upper bound)",
        ]
    )
    medians: dict[tuple[str, str], list[float]] = {}
    for operation, shape, resolution, spec in cases:
        results = [
            run_in_fresh_process({"operation": operation, **spec}) for _ in range(repetitions)
        ]
        seconds = statistics.median(result.seconds for result in results)
        medians.setdefault((operation, resolution), []).append(seconds)
        table.add(
            operation,
            shape,
            resolution,
            f"{spec['width']}x{spec['height']}",
            repetitions,
            f"{seconds:.2f} s",
            _mib(max(result.main_peak_mib for result in results)),
            max(result.live_helpers for result in results),
            _mib(max(result.total_peak_mib for result in results)),
        )
        print(f"{operation} {shape} {resolution}: {_summary(results)}", flush=True)
    section.tables.append(table)
    section.findings += _findings(medians)
    return section


def _generated(ratio: str, resolution: str) -> Image.Image:
    width, height = image_size(ratio, resolution)
    inputs = GenerateInput(GENERATE_PROMPT, width, height, quality="medium")
    return BuiltinGenerate().run(inputs, NoControl()).images[0]


def _at_size(source: Path, width: int, height: int, work: Path) -> Path:
    with Image.open(source) as image:
        if image.size == (width, height):
            return source
        path = work / f"source-{width}x{height}.png"
        image.resize((width, height), Image.Resampling.LANCZOS).save(path)
    return path


def _mib(value: float) -> str:
    return f"{value:,.0f} MiB"


def _summary(results: list[RunResult]) -> str:
    return ", ".join(
        f"{result.seconds:.2f} s / {result.total_peak_mib:.0f} MiB" for result in results
    )


def _findings(medians: dict[tuple[str, str], list[float]]) -> list[str]:
    findings = []
    goals = (
        ("generate", "1K", GOAL_GENERATE_1K_SECONDS, "generate 1K (medium)"),
        ("reframe", "1K", GOAL_REFRAME_1K_SECONDS, "reframe 1K (16:9 and 21:9, the slower)"),
        ("upscale", "4K", GOAL_UPSCALE_4K_SECONDS, "upscale to 4K"),
    )
    for operation, resolution, goal, label in goals:
        measured = medians.get((operation, resolution))
        if measured is None:
            findings.append(f"{label}: not measured in this run (`--quick` stops at 1K).")
            continue
        slowest = max(measured)
        findings.append(
            f"{label}: {slowest:.2f} s, goal under {goal:g} s {verdict(slowest < goal)}."
        )
    return findings
