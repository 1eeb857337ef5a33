"""`videos`: wall time and peak memory of the builtin video operations, called directly."""

from __future__ import annotations

import statistics

from benchmarks.harness import Options
from benchmarks.pipeline_run import run_in_fresh_process
from benchmarks.report import Section, Table, verdict
from core.sizes import image_size, video_size
from pipelines.base import GenerateInput, NoControl
from pipelines.builtin.generate import BuiltinGenerate

DURATION_SECONDS = 6.0
MOTION_PROMPT = "slow dolly in, drifting particles"
START_PROMPT = "a misty mountain lake at dawn, pine forest"
END_PROMPT = "a neon city street at night, rain"
TRANSITION_PROMPT = "a smooth morph from the lake to the city"
GOAL_ANIMATE_720P_SECONDS = 20.0
GOAL_TRANSITION_720P_SECONDS = 60.0
GOAL_PEAK_GIB = 3.0
METHOD = f"""
`BuiltinAnimate` and `BuiltinTransition` called directly (no service, no queue), with a control
whose `progress` does nothing, for {DURATION_SECONDS:g} s clips at 16:9 (sizes from
`core.sizes.video_size`), audio on, written to an MP4 file. Animate starts from a 16:9 1K
generation of "{START_PROMPT}" with the motion prompt "{MOTION_PROMPT}"; transition goes from that
frame to a different one, "{END_PROMPT}", prompt "{TRANSITION_PROMPT}". Every measurement is a
fresh `python -m benchmarks.pipeline_run` process that constructs the pipeline (not timed: a
worker does it at start-up), reads its frames, then times one `run()`. Peak memory is that
process's VmHWM plus the VmHWM of any helper process still alive after the run plus the largest
ended one (`getrusage(RUSAGE_CHILDREN)`); none were seen. Time is the median of the repetitions,
peak the largest. Goals: animate {DURATION_SECONDS:g} s 720p under
{GOAL_ANIMATE_720P_SECONDS:g} s, transition {DURATION_SECONDS:g} s 720p under
{GOAL_TRANSITION_720P_SECONDS:g} s, peak under {GOAL_PEAK_GIB:g} GiB.
"""


def run(options: Options) -> Section:
    repetitions = options.scaled(2, 1)
    resolutions = options.scaled(("480p", "720p"), ("480p",))
    work = options.work_dir / "videos"
    work.mkdir()
    start, end = work / "start.png", work / "end.png"
    width, height = image_size("16:9", "1K")
    for prompt, path in ((START_PROMPT, start), (END_PROMPT, end)):
        inputs = GenerateInput(prompt, width, height, quality="medium")
        BuiltinGenerate().run(inputs, NoControl()).images[0].save(path)
    section = Section("videos", METHOD)
    table = Table(
        [
            "operation",
            "resolution",
            "pixels",
            "runs",
            "wall time (median)",
            "real-time factor",
            "peak, all processes",
            "helpers",
        ]
    )
    peaks_gib = []
    for resolution in resolutions:
        clip_width, clip_height = video_size(16, 9, resolution)
        for operation, prompt in (("animate", MOTION_PROMPT), ("transition", TRANSITION_PROMPT)):
            spec = {
                "operation": operation,
                "prompt": prompt,
                "source": str(start),
                "end": str(end),
                "width": clip_width,
                "height": clip_height,
                "duration": DURATION_SECONDS,
                "output": str(work / f"{operation}-{resolution}.mp4"),
            }
            results = [run_in_fresh_process(spec) for _ in range(repetitions)]
            seconds = statistics.median(result.seconds for result in results)
            peak_gib = max(result.total_peak_mib for result in results) / 1024
            peaks_gib.append(peak_gib)
            table.add(
                operation,
                resolution,
                f"{clip_width}x{clip_height}",
                repetitions,
                f"{seconds:.1f} s",
                f"{seconds / DURATION_SECONDS:.2f}x",
                f"{peak_gib:.2f} GiB",
                max(result.live_helpers for result in results),
            )
            print(
                f"{operation} {resolution}: {[round(r.seconds, 1) for r in results]} s", flush=True
            )
            if resolution == "720p":
                goal = (
                    GOAL_ANIMATE_720P_SECONDS
                    if operation == "animate"
                    else GOAL_TRANSITION_720P_SECONDS
                )
                section.findings.append(
                    f"{operation} {DURATION_SECONDS:g} s 720p: {seconds:.1f} s, goal under "
                    f"{goal:g} s {verdict(seconds < goal)}."
                )
    if "720p" not in resolutions:
        section.findings.append("720p: not measured in this run (`--quick` stops at 480p).")
    peak = max(peaks_gib)
    section.findings.append(
        f"Largest peak {peak:.2f} GiB, goal under {GOAL_PEAK_GIB:g} GiB "
        f"{verdict(peak < GOAL_PEAK_GIB)}."
    )
    section.tables.append(table)
    return section
