"""Job state events: a worker says "job X changed", long-polls waiting on X wake up.

Embedded mode broadcasts inside the process; with a Redis broker the events travel over Redis
pub/sub so a long-poll held on any gateway replica wakes whichever worker finished the job.
A progress event ("job X moved on") wakes only the subscribers that asked for progress (event
streams), so long-polls waiting for a terminal state are not woken about once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import AsyncIterator

import redis
import redis.asyncio as aioredis

log = logging.getLogger(__name__)
# Appended to the job id of a progress event on the Redis channel.
PROGRESS_SUFFIX = " progress"


class JobEvents:
    """In-process broadcast; the base of the Redis variant, which adds the network hop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event, bool]]] = (
            defaultdict(set)
        )

    @property
    def held(self) -> int:
        with self._lock:
            return sum(len(waiters) for waiters in self._waiters.values())

    def publish(self, job_id: str) -> None:
        """The job's state changed. Callable from any thread."""
        self._wake(job_id, progress=False)

    def publish_progress(self, job_id: str) -> None:
        """The job's progress moved on (its state did not change). Callable from any thread."""
        self._wake(job_id, progress=True)

    def _wake(self, job_id: str, progress: bool) -> None:
        with self._lock:
            waiters = list(self._waiters.get(job_id, ()))
        for loop, event, wants_progress in waiters:
            if progress and not wants_progress:
                continue
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting
                loop.call_soon_threadsafe(event.set)

    @contextlib.asynccontextmanager
    async def subscribe(self, job_id: str, progress: bool = False) -> AsyncIterator[asyncio.Event]:
        """Register before reading the job, so a change between the read and the wait is seen;
        `progress`: be woken by progress events too."""
        entry = (asyncio.get_running_loop(), asyncio.Event(), progress)
        with self._lock:
            self._waiters[job_id].add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                waiters = self._waiters.get(job_id)
                if waiters is not None:
                    waiters.discard(entry)
                    if not waiters:
                        del self._waiters[job_id]

    async def start(self) -> None:
        """Begin receiving events from elsewhere (nothing to do in-process)."""

    async def stop(self) -> None:
        """Stop receiving."""


class RedisJobEvents(JobEvents):
    def __init__(self, url: str, channel: str) -> None:
        super().__init__()
        self._url = url
        self.channel = channel
        self._publisher = redis.Redis.from_url(url)
        self._listener: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()

    def publish(self, job_id: str) -> None:
        self._send(job_id, job_id)
        self._wake(job_id, progress=False)

    def publish_progress(self, job_id: str) -> None:
        self._send(job_id, f"{job_id}{PROGRESS_SUFFIX}")
        self._wake(job_id, progress=True)

    def _send(self, job_id: str, message: str) -> None:
        try:
            self._publisher.publish(self.channel, message)
        except redis.RedisError as error:
            # Long-polls still end by their timeout; the job row itself is already committed.
            log.warning("could not publish the event of job %s: %s", job_id, error)

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._listen(), name="job-events")

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self) -> None:
        backoff = 0.1
        while True:
            client = aioredis.Redis.from_url(self._url)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel)
                    self.subscribed.set()
                    backoff = 0.1
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            data = message["data"].decode()
                            job_id = data.removesuffix(PROGRESS_SUFFIX)
                            self._wake(job_id, progress=job_id != data)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a dropped connection: reconnect with backoff
                self.subscribed.clear()
                log.warning("job events: redis connection lost (%s); reconnecting", error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                await client.aclose()


def job_events_for(broker_url: str, namespace: str) -> JobEvents:
    if broker_url.startswith(("redis://", "rediss://")):
        return RedisJobEvents(broker_url, f"{namespace}:job-events")
    return JobEvents()
