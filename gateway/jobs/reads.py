"""Reading one of the caller's jobs, the hottest request every client makes, and its long-poll.

The read is one statement compiled once and run on the driver's own connection
(`jobs_service.view_owned`, `core/driver_reads.py`): inline on SQLite, on psycopg's asyncio
connection on PostgreSQL, never in a thread. A long-poll watches the job's state events before it
reads (`JobEvents.watch`), so no change is missed, and reads again only when woken. Long-polls of
one account's job woken by the same event share one read (a job many clients hold makes one query
per change, not one per waiter). A job in flight's answer carries its standing (its queue
position and estimates, `core/jobs/standing.py`), worked out when the answer is made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from core.db import Database
from core.events import JobEvents, JobWatch, begun_after_wakes
from core.jobs import service as jobs_service
from core.jobs.contract import TERMINAL
from core.jobs.standing import ReadJob, Standing, Standings
from gateway.jobs.presenter import JobAnswers, JobLike
from gateway.signing import UrlSigner


class JobView(JobLike, ReadJob, Protocol):
    """A job as the read gives it: what the presenter shows, and what its standing needs."""


class JobReads:
    def __init__(self, db: Database, events: JobEvents, wait_seconds: float) -> None:
        self.db = db
        self.events = events
        self.wait_seconds = wait_seconds
        # Per (account, job): the latest read begun for woken long-polls, with its ordinal.
        self._rereads: dict[tuple[str, str], tuple[int, asyncio.Future[Any]]] = {}
        self._answers = JobAnswers()
        self.standings = Standings(db)

    async def answer(
        self, account_id: str, job_id: str, types: Sequence[str], wait: bool, signer: UrlSigner
    ) -> bytes | None:
        """The body of `read`'s answer, `{"data": job}` (None: no such job)."""
        job = await self.read(account_id, job_id, types, wait)
        if job is None:
            return None
        return self._answers.body(job, signer, await self.standing(job))

    async def standing(self, job: JobView) -> Standing | None:
        """Where the job stands if it is in flight (None once it is finished)."""
        if job.status in TERMINAL:
            return None
        return await self.standings.of_read(job)

    async def read(
        self, account_id: str, job_id: str, types: Sequence[str], wait: bool
    ) -> JobView | None:
        """The account's job of one of `types` (None: no such job), after waiting for a terminal
        state when `wait` (about `wait_seconds` at most)."""
        if not wait:
            return _of_types(await self._view(account_id, job_id), types)
        return await self.read_when(account_id, job_id, types, _is_terminal)

    async def read_when(
        self,
        account_id: str,
        job_id: str,
        types: Sequence[str],
        ready: Callable[[JobView], bool],
    ) -> JobView | None:
        """The account's job of one of `types` (None: no such job) once `ready` holds for it,
        or as it is after about `wait_seconds`; woken by the job's state events."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        with self.events.watch(job_id) as watch:
            job = _of_types(await self._view(account_id, job_id), types)
            while job is not None and not ready(job):
                if not await watch.changed(deadline):
                    break
                job = _of_types(await self._reread(account_id, job_id, watch), types)
        return job

    async def _view(self, account_id: str, job_id: str) -> Any:
        return await jobs_service.view_owned(self.db, account_id, job_id)

    async def _reread(self, account_id: str, job_id: str, watch: JobWatch) -> Any:
        """The job after the change that woke `watch`: a read begun since, shared by the
        account's long-polls of the job, or a new one."""
        key = (account_id, job_id)
        latest = self._rereads.get(key)
        if latest is None or latest[0] < watch.woken_at:
            # A task of its own, so that a waiter that goes away does not cancel the others' read.
            latest = (begun_after_wakes(), asyncio.ensure_future(self._view(account_id, job_id)))
            self._rereads[key] = latest
            latest[1].add_done_callback(lambda _: self._forget(key, latest))
        return await asyncio.shield(latest[1])

    def _forget(self, key: tuple[str, str], reread: tuple[int, asyncio.Future[Any]]) -> None:
        if self._rereads.get(key) is reread:
            del self._rereads[key]


def _is_terminal(job: JobView) -> bool:
    return job.status in TERMINAL


def _of_types(job: Any, types: Sequence[str]) -> JobView | None:
    return job if job is not None and job.type in types else None
