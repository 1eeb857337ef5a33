"""Reading one of the caller's jobs, the hottest request every client makes, and its long-poll.

The read is one prebuilt statement on a session-less connection (`jobs_service.view_owned`), run
inline on SQLite and in a thread on a database across the network (`gateway/reads.run_read`).
A long-poll subscribes to the job's state events before it reads, so no change is missed, and
reads again only when woken."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from core.db import Database
from core.events import JobEvents
from core.jobs import service as jobs_service
from core.jobs.contract import TERMINAL
from gateway.jobs.presenter import JobLike
from gateway.reads import run_read


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
        db = self.db

        def load() -> JobLike | None:
            job = jobs_service.view_owned(db, account_id, job_id)
            return job if job is not None and job.type in types else None

        if not wait:
            return await run_read(db, load)
        return await self._wait_for_terminal(job_id, load)

    async def _wait_for_terminal(
        self, job_id: str, load: Callable[[], JobLike | None]
    ) -> JobLike | None:
        """Hold until the job is terminal or the wait runs out; wake-ups are pushed, not
        polled."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        async with self.events.subscribe(job_id) as changed:
            job = await run_read(self.db, load)
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
                job = await run_read(self.db, load)
        return job
