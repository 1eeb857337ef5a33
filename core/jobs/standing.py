"""Where a job in flight stands: a pending job's place in its queue (`queuePosition`, 1 = the
next of its queue to start) and when it should start (`estimatedStartAt`); a processing job's
expected end (`estimatedCompletionAt`). Extensions of the API (docs/api.md, "Queue position").

The order is the scheduler's own:
- image and style: the broker's queue is first in, first out, and a job joins it when it is
  published (`dispatched_at`; a job handed back or recovered is published again, at the end),
  or, not yet published (just created, or the broker was down), in creation order behind the
  published ones' moments. The jobs ahead are counted on a partial index of pending jobs
  (`repository.JOBS_AHEAD`): index ranges, never the table, in the job read's own statement.
- video: the video line (`core/jobs/dispatch.py`). Each account has at most one video published
  (or running); its next is published when that one ends, at the end of the broker's queue. So
  the published videos come first in the order they were published, then the waiting ones in
  rounds: every account's first waiting video, then every second, ..., within a round in the
  order their accounts' current videos were published (`line_order`). Read from the videos in
  flight, a few per account (the plans' `max_inflight_videos`).

The estimates come from the queue's recent runs (`QueuePace`): its jobs completed in the last
`HISTORY_WINDOW` (the last `HISTORY_RUNS` of them), and those running now.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from core.clock import utcnow
from core.db import Database
from core.jobs import repository
from core.jobs.contract import JobStatus, Queue
from core.jobs.repository import LineEntry, Run

HISTORY_WINDOW = timedelta(hours=1)
HISTORY_RUNS = 50
# Below this a job's progress says too little for a rate (the first step of a long pipeline).
MIN_PROGRESS = 0.01
# How long a process keeps a queue's pace: reads of a backlog share it, and it moves slowly.
PACE_SECONDS = 1.0


class InFlightJob(Protocol):
    """What a standing is worked out from: a Job row, or the job read's lighter row."""

    id: str
    account_id: str
    queue: str
    status: str
    created_at: datetime
    dispatched_at: datetime | None
    started_at: datetime | None
    progress: float


class ReadJob(InFlightJob, Protocol):
    """The job read's row (`repository.JOB_VIEW_COLUMNS`): the jobs ahead of a pending image or
    style job come with it."""

    jobs_ahead: int | None


@dataclass(frozen=True)
class Standing:
    """A pending job's position and estimated start, or a processing job's estimated end."""

    queue_position: int | None = None
    estimated_start_at: datetime | None = None
    estimated_completion_at: datetime | None = None


def completion_of(
    started_at: datetime, progress: float, now: datetime, run_seconds: float | None
) -> datetime | None:
    """When a running job should end: at the rate its progress moved since it started, or,
    before it has moved `MIN_PROGRESS`, a recent run's mean length after its start (not before
    now); None when neither is known."""
    if MIN_PROGRESS <= progress < 1:
        return started_at + (now - started_at) / progress
    if run_seconds is None:
        return None
    return max(now, started_at + timedelta(seconds=run_seconds))


def most_at_once(runs: Sequence[Run], now: datetime) -> int:
    """The most of `runs` that were on workers at the same moment (running ones until now)."""
    edges = sorted(
        [(run.started_at, 1) for run in runs] + [(run.finished_at or now, -1) for run in runs],
        key=lambda edge: (edge[0], edge[1]),  # an end before a start at the same moment
    )
    busy = most = 0
    for _, change in edges:
        busy += change
        most = max(most, busy)
    return most


@dataclass(frozen=True)
class QueuePace:
    """How fast a queue's workers go lately.

    `run_seconds`: the mean time on a worker of its recent runs (None: none completed in the
    window, so nothing can be estimated). `slots`: how many of its jobs run at once, the most
    seen at once among the recent and running ones (its workers' threads, batches included).
    `frees_at`: when each slot should next be free, soonest first: a running job's expected end,
    now for an idle slot.
    """

    run_seconds: float | None
    slots: int
    frees_at: tuple[datetime, ...]

    @classmethod
    def of(cls, recent: Sequence[Run], running: Sequence[Run], now: datetime) -> QueuePace:
        lengths = [
            max(0.0, (run.finished_at - run.started_at).total_seconds())
            for run in recent
            if run.finished_at is not None
        ]
        run_seconds = sum(lengths) / len(lengths) if lengths else None
        slots = max(1, len(running), most_at_once([*recent, *running], now))
        ends = [completion_of(run.started_at, run.progress, now, run_seconds) for run in running]
        frees_at = [max(now, end) if end is not None else now for end in ends]
        frees_at += [now] * (slots - len(running))
        return cls(run_seconds, slots, tuple(sorted(frees_at)))

    def start_of(self, position: int) -> datetime | None:
        """When the job at `position` should start: the jobs ahead take the slots as they free,
        each for `run_seconds`, so the job at position p takes the ((p-1) mod slots)-th slot to
        free after (p-1) div slots runs."""
        if self.run_seconds is None:
            return None
        rounds, slot = divmod(position - 1, self.slots)
        return self.frees_at[slot] + timedelta(seconds=rounds * self.run_seconds)


def line_order(entries: Sequence[LineEntry]) -> list[str]:
    """The pending videos' ids in the order the video line starts them (see the module's doc)."""
    holders: dict[str, tuple[datetime, str]] = {}
    published: list[LineEntry] = []
    waiting: dict[str, list[LineEntry]] = {}
    for entry in entries:
        if entry.status == JobStatus.PROCESSING or entry.dispatched_at is not None:
            # A running or published video holds its account's line.
            holders[entry.account_id] = (entry.dispatched_at or entry.created_at, entry.id)
            if entry.status == JobStatus.PENDING:
                published.append(entry)
        else:
            waiting.setdefault(entry.account_id, []).append(entry)
    published.sort(key=lambda entry: (entry.dispatched_at, entry.id))
    rounds: list[tuple[int, tuple[int, datetime, str], str]] = []
    for account_id, line in waiting.items():
        line.sort(key=lambda entry: (entry.created_at, entry.id))
        holder = holders.get(account_id)
        # A line held nowhere (its next not yet published) goes after the held ones.
        account_turn = (0, *holder) if holder else (1, line[0].created_at, line[0].id)
        rounds.extend((number, account_turn, entry.id) for number, entry in enumerate(line))
    rounds.sort()
    return [entry.id for entry in published] + [job_id for _, _, job_id in rounds]


class Standings:
    """The standings of one process's reads: positions read per job, each queue's pace kept
    for `PACE_SECONDS`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._paces: dict[str, tuple[float, QueuePace]] = {}

    def of(self, job: InFlightJob) -> Standing | None:
        """The job's standing (None for a finished job), read in the calling thread."""
        if job.status == JobStatus.PENDING:
            position = self._position(job)
            return self._pending(position, self.pace(job.queue))
        if job.status == JobStatus.PROCESSING:
            return self._processing(job, self.pace(job.queue))
        return None

    async def of_read(self, job: ReadJob) -> Standing | None:
        """`of` for the job read on the event loop: an image or style job's position came with
        its read (`repository.JOB_VIEW_COLUMNS`); the rest, a pace once per `PACE_SECONDS` and
        the video line, is read in a thread."""
        if job.status == JobStatus.PENDING:
            if job.queue == Queue.VIDEO:
                position = await asyncio.to_thread(self._line_position, job.id)
            else:
                position = (job.jobs_ahead or 0) + 1
            return self._pending(position, await self._pace_async(job.queue))
        if job.status == JobStatus.PROCESSING:
            return self._processing(job, await self._pace_async(job.queue))
        return None

    def pace(self, queue: str) -> QueuePace:
        kept = self._paces.get(queue)
        if kept is not None and time.monotonic() - kept[0] < PACE_SECONDS:
            return kept[1]
        now = utcnow()
        with self.db.read() as session:
            recent = repository.recent_runs(session, queue, now - HISTORY_WINDOW, HISTORY_RUNS)
            running = repository.running(session, queue)
        pace = QueuePace.of(recent, running, now)
        self._paces[queue] = (time.monotonic(), pace)
        return pace

    async def _pace_async(self, queue: str) -> QueuePace:
        kept = self._paces.get(queue)
        if kept is not None and time.monotonic() - kept[0] < PACE_SECONDS:
            return kept[1]
        return await asyncio.to_thread(self.pace, queue)

    def _pending(self, position: int | None, pace: QueuePace) -> Standing:
        if position is None:  # started or ended between the two reads
            return Standing()
        return Standing(queue_position=position, estimated_start_at=pace.start_of(position))

    def _processing(self, job: InFlightJob, pace: QueuePace) -> Standing:
        if job.started_at is None:
            return Standing()
        end = completion_of(job.started_at, job.progress, utcnow(), pace.run_seconds)
        return Standing(estimated_completion_at=end)

    def _position(self, job: InFlightJob) -> int | None:
        if job.queue == Queue.VIDEO:
            return self._line_position(job.id)
        with self.db.read() as session:
            return repository.jobs_ahead(session, job.id) + 1

    def _line_position(self, job_id: str) -> int | None:
        with self.db.read() as session:
            order = line_order(repository.video_line(session))
        return order.index(job_id) + 1 if job_id in order else None
