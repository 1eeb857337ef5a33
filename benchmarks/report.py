"""Results as Markdown: one section per benchmark, printed as it ends and written to the doc."""

from __future__ import annotations

import os
import platform
import textwrap
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

WIDTH = 100


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(cell) for cell in cells])

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


@dataclass
class Section:
    """What one benchmark found: how it measured, its tables, and what the figures say."""

    name: str
    method: str
    tables: list[Table] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    # Printed as the run's very last line, after the page is written (the `chaos` verdict).
    last_line: str | None = None

    def markdown(self) -> str:
        parts = [f"## `{self.name}`", reflow(self.method)]
        parts += [table.markdown() for table in self.tables]
        parts += ["\n".join(f"- {finding}" for finding in self.findings)] if self.findings else []
        return "\n\n".join(parts)


def reflow(text: str) -> str:
    """Paragraphs refilled to the page width, whatever the values put into them."""
    paragraphs = text.strip().split("\n\n")
    return "\n\n".join(
        textwrap.fill(" ".join(paragraph.split()), WIDTH) for paragraph in paragraphs
    )


def verdict(met: bool) -> str:
    return "**met**" if met else "**missed**"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return float("nan")


def machine() -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return "\n".join(
        [
            f"- CPU: {_cpu_model()}, {os.cpu_count()} cores",
            f"- RAM: {_memory_gib():.1f} GiB",
            f"- Python {platform.python_version()} on Linux {platform.release()}",
            f"- Load average when the run began (1, 5, 15 min): {load}",
        ]
    )


SETUP = """
In the benchmarks of the running service (`job_read`, `long_poll`, `create_to_start`) every
server runs in its own process: the gateway is a real `sfumato serve` subprocess (`python -m
sfumato serve`), workers are in it (embedded mode) or in a separate `sfumato worker --queue
image` process (distributed mode: PostgreSQL in a temporary database, Redis database 10 as
broker). Clients are never threads of a server process. Jobs use the test pipeline
`benchmarks.testkit.pipelines:ControllableGenerate`, whose prompt `[sleep S]` makes a job take
S seconds and paint a solid image. Other processes on the machine share its cores, so figures
move from run to run; the load average above says how busy it was. `create_overhead`, `images`
and `videos` say in their sections how they measure.
"""


def document(
    started: datetime, machine: str, command: str, sections: list[Section], failures: list[str]
) -> str:
    """The whole page; `machine` as `machine()` described it when the run began."""
    written = (
        f"Written by `{command}` on {started:%Y-%m-%d %H:%M} UTC; run it again to refresh this "
        "page (`--quick` for a short smoke run, names to run only some benchmarks: their "
        "sections are replaced, the others kept, each with the run it comes from)."
    )
    parts = [
        "# Benchmarks",
        reflow(written),
        machine,
        reflow(SETUP),
        *(section.markdown() for section in sections),
    ]
    if failures:
        parts.append(FAILED_HEADING + "\n\n" + "\n".join(f"- {failure}" for failure in failures))
    return "\n\n".join(parts) + "\n"


FAILED_HEADING = "## Failed"


def run_stamp(started: datetime, command: str) -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"_Run {started:%Y-%m-%d %H:%M} UTC by `{command}` on {os.cpu_count()} cores; load "
        f"average when it began (1, 5, 15 min): {load}._"
    )


def merged(page: str, run: str, sections: list[Section], failures: list[str]) -> str:
    """`page` with each of `sections` put in place of the section of the same name (appended
    when it has none), each stamped with `run` (when, which command, the machine's load), and
    every other section kept as it was: a run of some benchmarks refreshes only theirs."""
    blocks = _blocks(page)
    for section in sections:
        heading = f"## `{section.name}`"
        text = section.markdown().replace(heading, f"{heading}\n\n{run}", 1)
        blocks[heading] = text  # in its place, or appended
    blocks.pop(FAILED_HEADING, None)
    if failures:
        blocks[FAILED_HEADING] = (
            FAILED_HEADING + "\n\n" + "\n".join(f"- {failure}" for failure in failures)
        )
    return "\n\n".join(block.strip() for block in blocks.values()) + "\n"


def _blocks(page: str) -> dict[str, str]:
    """The page cut at its `## ` headings, in order: the text before the first one under ""."""
    blocks: dict[str, str] = {"": ""}
    heading = ""
    for line in page.splitlines(keepends=True):
        if line.startswith("## "):
            heading = line.rstrip("\n")
            blocks[heading] = ""
        blocks[heading] += line
    return blocks
