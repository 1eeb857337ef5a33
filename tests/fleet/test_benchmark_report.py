"""docs/benchmarks.md: a run of some benchmarks replaces their sections and keeps the others."""

from __future__ import annotations

from benchmarks.measures import percentile
from benchmarks.report import Section, Table, merged

PAGE = """# Benchmarks

Written by `python -m benchmarks` on an earlier day.

## Hot paths: what changed

Hand-written notes.

## `job_read`

Old figures.

## `long_poll`

Old long-poll figures.

## Failed

- `fleet`: RuntimeError: gone
"""


def test_a_partial_run_replaces_only_its_sections() -> None:
    table = Table(["server", "requests/s"])
    table.add("sfumato", "1,234")
    fresh = Section("job_read", "How it measures.", [table], ["A finding."])
    added = Section("create_overhead", "Another method.")
    page = merged(PAGE, "_Run today._", [fresh, added], [])
    assert "Old figures." not in page
    assert "## `job_read`\n\n_Run today._\n\nHow it measures." in page
    assert "| sfumato | 1,234 |" in page
    # Kept where they were, in order; the new one appended; the old failure gone.
    assert "Hand-written notes." in page and "Old long-poll figures." in page
    order = [page.index(text) for text in ("Hot paths", "`job_read`", "`long_poll`", "`create")]
    assert order == sorted(order)
    assert "## Failed" not in page
    assert page.startswith("# Benchmarks\n\nWritten by")


def test_a_failure_is_listed_and_other_sections_stay() -> None:
    page = merged(PAGE, "_Run today._", [], ["`job_read`: RuntimeError: no answer"])
    assert "Old figures." in page
    assert page.endswith("## Failed\n\n- `job_read`: RuntimeError: no answer\n")


def test_percentiles_are_nearest_rank() -> None:
    """p99 of 100 values is the 99th, not their maximum (the benchmarks' tables have a max
    column of their own)."""
    values = [float(n) for n in range(1, 101)]
    assert [percentile(values, f) for f in (0.5, 0.9, 0.99, 1.0)] == [50.0, 90.0, 99.0, 100.0]
    assert percentile(values, 0.0) == 1.0
    assert percentile([7.0], 0.99) == 7.0
