"""Reading one of the caller's jobs, the hottest request every client makes, and its long-poll.

The read is one statement compiled once and run on the driver's own connection
(`jobs_service.view_owned`, `core/driver_reads.py`): inline on SQLite, on psycopg's asyncio
connection on PostgreSQL, never in a thread. A long-poll subscribes to the job's state events
before it reads, so no change is missed, and reads again only when woken."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from core.db import Database
from core.events import JobEvents
from core.jobs import service as jobs_service
from core.jobs.contract import TERMINAL
from gateway.jobs.presenter import JobLike


class JobReads:
    def __init__(self, db: Database, events: JobEvents, wait_seconds: float) -> None:
        self.db = db
        self.events = events
        self.wait_seconds = wait_seconds

    async def read(
        self, account_id: str, job_id: str, types: Sequence[str], wait: bool
    ) -> JobLike | None:
        """The account's job of one of `types` (None: no such job), after waiting for a terminal
        state when `wait` (about `wait_seconds` at most)."""
        if not wait:
            return await self._load(account_id, job_id, types)
        return await self._wait_for_terminal(account_id, job_id, types)

    async def _load(self, account_id: str, job_id: str, types: Sequence[str]) -> JobLike | None:
        job = await jobs_service.view_owned(self.db, account_id, job_id)
        return job if job is not None and job.type in types else None

    async def _wait_for_terminal(
        self, account_id: str, job_id: str, types: Sequence[str]
    ) -> JobLike | None:
        """Hold until the job is terminal or the wait runs out; wake-ups are pushed, not
        polled."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        async with self.events.subscribe(job_id) as changed:
            job = await self._load(account_id, job_id, types)
            while job is not None and job.status not in TERMINAL:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    # A timer on this task, not a task per waiter as `wait_for` would make.
                    async with asyncio.timeout(remaining):
                        await changed.wait()
                except TimeoutError:
                    break
                changed.clear()
                job = await self._load(account_id, job_id, types)
        return job
