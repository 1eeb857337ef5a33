"""`GET /v1/jobs/{id}/events`: one job as a Server-Sent Events stream.

Each event carries the job exactly as `GET /v1/jobs/{id}` shows it (`data: {"data": job}`) and
an `id:` naming the state it shows, `<status>/<progress in thousandths>` (`processing/420`, with
`/<n>` added while it shows its n-th live preview, `processing/420/3`, or a pending job's queue
position, `pending/0/3`): the same state has the same id, so a reconnect with `Last-Event-ID` is
sent the job at once only when it has changed since. The stream subscribes to the job's events
(state and progress, the same bus long-polls use, so any replica streams any job) and, while the
job is pending, to its queue's (a job of it started or left it: the position moved), re-reads
the job when woken, sends it when its id differs from the last one sent (at most
`MAX_EVENTS_PER_SECOND`), a comment when nothing was sent for `heartbeat_seconds`, and ends
after the terminal job or when the server shuts down.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import ExitStack
from typing import Any

from core.jobs.contract import TERMINAL, JobStatus, preview_number
from core.jobs.standing import Standing
from gateway.jobs.presenter import JobLike, JobPresenter, preview_of, progress_of
from gateway.jobs.reads import JobReads

MAX_EVENTS_PER_SECOND = 5


def event_id(job: JobLike, standing: Standing | None = None) -> str:
    """`<status>/<progress in thousandths>`, and `/<n>` while it shows its n-th live preview,
    or a pending job's queue position."""
    state = f"{job.status}/{round(progress_of(job) * 1000)}"
    preview = preview_of(job)
    if preview is not None:
        return f"{state}/{preview_number(preview)}"
    position = standing.queue_position if standing is not None else None
    return state if position is None else f"{state}/{position}"


def is_repeat_of_terminal(job: JobLike, last_event_id: str | None) -> bool:
    """A reconnect after the terminal event: nothing more will ever be sent."""
    return job.status in TERMINAL and event_id(job) == last_event_id


def _event(identifier: str, view: dict[str, Any]) -> str:
    data = json.dumps({"data": view}, separators=(",", ":"))
    return f"id: {identifier}\ndata: {data}\n\n"


class JobEventStream:
    def __init__(
        self,
        reads: JobReads,
        presenter: JobPresenter,
        heartbeat_seconds: float,
        closing: asyncio.Event,
    ) -> None:
        self.reads = reads
        self.presenter = presenter
        self.heartbeat_seconds = heartbeat_seconds
        self.closing = closing

    async def events(
        self, account_id: str, job_id: str, types: tuple[str, ...], last_event_id: str | None
    ) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        sent_id = last_event_id
        sent_at = loop.time() - 1.0
        events = self.reads.events
        async with events.subscribe(job_id, progress=True) as changed:
            with ExitStack() as queue_watch:
                watching_queue = False
                while not self.closing.is_set():
                    changed.clear()
                    job = await self.reads.read(account_id, job_id, types, wait=False)
                    if job is None:  # deleted while streamed
                        return
                    if job.status == JobStatus.PENDING and not watching_queue:
                        # Before its standing is read, so no move of the queue goes unseen.
                        queue_watch.enter_context(events.subscribe_queue(job.queue, changed))
                        watching_queue = True
                    elif job.status != JobStatus.PENDING and watching_queue:
                        queue_watch.close()
                        watching_queue = False
                    standing = await self.reads.standing(job)
                    identifier = event_id(job, standing)
                    if identifier != sent_id:
                        sent_id = identifier
                        sent_at = loop.time()
                        yield _event(identifier, self.presenter.job(job, standing))
                    if job.status in TERMINAL:
                        return
                    # Changes that come sooner than the rate allows are read together afterwards.
                    await asyncio.sleep(max(0.0, sent_at + 1 / MAX_EVENTS_PER_SECOND - loop.time()))
                    while not await self._woken(changed):
                        if self.closing.is_set():
                            return
                        yield ": heartbeat\n\n"

    async def _woken(self, changed: asyncio.Event) -> bool:
        """True when the job changed, False after a heartbeat interval or at shutdown."""
        waits = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(self.closing.wait())]
        try:
            await asyncio.wait(
                waits, timeout=self.heartbeat_seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for wait in waits:
                wait.cancel()
        return changed.is_set() and not self.closing.is_set()
