"""The arithmetic of a job's standing (`core/jobs/standing.py`): the video line's order, a
queue's pace from its runs, and the estimates made from it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.jobs.repository import LineEntry, Run
from core.jobs.standing import QueuePace, completion_of, line_order, most_at_once

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def entry(
    job_id: str,
    account: str,
    created: float,
    status: str = "pending",
    published: float | None = None,
) -> LineEntry:
    return LineEntry(
        job_id, account, status, at(created), at(published) if published is not None else None
    )


def test_the_line_starts_published_videos_first_then_each_accounts_waiting_ones_in_rounds() -> None:
    entries = [
        entry("c0", "c", -100, "processing", published=-100),
        entry("a1", "a", -50, published=-50),
        entry("a2", "a", -49),
        entry("a3", "a", -48),
        entry("b1", "b", -40, published=-40),
        entry("b2", "b", -39),
        # An account whose running video holds its line: its next waits a round like the others.
        entry("c1", "c", -30),
    ]
    # Rounds in the order the accounts' current videos were published: c (-100), a, b.
    assert line_order(entries) == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_a_line_held_by_nobody_waits_behind_the_held_ones() -> None:
    entries = [entry("a1", "a", -50, published=-50), entry("a2", "a", -49), entry("z1", "z", -60)]
    assert line_order(entries) == ["a1", "a2", "z1"]


def test_nothing_can_be_estimated_without_a_completed_run() -> None:
    pace = QueuePace.of([], [Run(at(-5), None, 0.5)], NOW)
    assert pace.run_seconds is None
    assert pace.start_of(1) is None
    # A running job with progress still has an end: its own rate.
    assert completion_of(at(-5), 0.5, NOW, None) == at(5)
    assert completion_of(at(-5), 0.0, NOW, None) is None


def test_jobs_take_the_slots_as_they_free_each_for_a_mean_run() -> None:
    # Two slots seen busy at once; runs of 10 s and 20 s: a mean of 15 s.
    recent = [Run(at(-100), at(-90), 1.0), Run(at(-95), at(-75), 1.0)]
    running = [Run(at(-6), None, 0.5), Run(at(-2), None, 0.1)]  # ends at +6 and at +18
    pace = QueuePace.of(recent, running, NOW)
    assert (pace.run_seconds, pace.slots) == (15.0, 2)
    assert pace.frees_at == (at(6), at(18))
    assert [pace.start_of(position) for position in (1, 2, 3, 4, 5)] == [
        at(6),
        at(18),
        at(21),
        at(33),
        at(36),
    ]


def test_an_idle_slot_is_free_now_and_a_late_job_ends_no_sooner_than_now() -> None:
    recent = [Run(at(-100), at(-90), 1.0), Run(at(-99), at(-89), 1.0), Run(at(-98), at(-88), 1.0)]
    running = [Run(at(-30), None, 0.0)]  # no progress yet, already past a mean run
    pace = QueuePace.of(recent, running, NOW)
    assert pace.slots == 3
    assert pace.frees_at == (NOW, NOW, NOW)
    assert completion_of(at(-3), 0.0, NOW, 10.0) == at(7)


def test_most_at_once_counts_an_end_and_a_start_at_one_moment_as_a_handover() -> None:
    runs = [Run(at(0), at(10), 1.0), Run(at(10), at(20), 1.0), Run(at(5), None, 0.2)]
    assert most_at_once(runs, at(30)) == 2
