"""Job state events: a worker says "job X changed", long-polls waiting on X wake up. Beside
them, credential events: a key or an account changed, so every gateway drops the callers it
cached (`core/accounts/callers.py`).

Embedded mode broadcasts inside the process; with a Redis broker the events travel over Redis
pub/sub so a long-poll held on any gateway replica wakes whichever worker finished the job.
A progress event ("job X moved on") wakes only the subscribers that asked for progress (event
streams), so long-polls waiting for a terminal state are not woken about once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import mmap
import os
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import redis
import redis.asyncio as aioredis

log = logging.getLogger(__name__)
# Appended to the job id of a progress event on the Redis channel.
PROGRESS_SUFFIX = " progress"
# A job's waiter: its event loop, the callable that wakes it there, whether progress wakes it.
_Waiter = tuple[asyncio.AbstractEventLoop, Callable[[], None], bool]
# Ordinal of each wake delivered to a watch and of each read begun after wakes (`JobWatch`).
_ordinals = itertools.count()


class JobEvents:
    """In-process broadcast; the base of the Redis variant, which adds the network hop.

    Credential events reach the other processes of an embedded deployment (the CLI's, which
    change keys) through `credentials_marker`, a file beside the SQLite database (see
    `CredentialsMarker`). None (a database other processes may reach from other machines):
    they cannot be told.
    """

    def __init__(self, credentials_marker: Path | None = None) -> None:
        self._credentials_marker = (
            CredentialsMarker(credentials_marker) if credentials_marker else None
        )
        self._marker_seen = self._credentials_marker.read() if self._credentials_marker else None
        self._lock = threading.Lock()
        # Per job: (the waiter's loop, what wakes it there, whether progress events do too).
        self._waiters: dict[str, set[_Waiter]] = defaultdict(set)
        self._credential_listeners: list[Callable[[], None]] = []

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
        if not waiters:
            return
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:  # a worker's thread
            current = None
        # One call per loop wakes all of its waiters together: so the long-polls woken by one
        # event are all woken before any of them reads again, and share that read.
        wakes: dict[asyncio.AbstractEventLoop, list[Callable[[], None]]] = defaultdict(list)
        for loop, wake, wants_progress in waiters:
            if not progress or wants_progress:
                wakes[loop].append(wake)
        for loop, calls in wakes.items():
            if loop is current:
                # The Redis listener runs on the waiters' loop: no wake-up of the loop needed.
                _call_all(calls)
                continue
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting
                loop.call_soon_threadsafe(_call_all, calls)

    @contextlib.asynccontextmanager
    async def subscribe(self, job_id: str, progress: bool = False) -> AsyncIterator[asyncio.Event]:
        """Register before reading the job, so a change between the read and the wait is seen;
        `progress`: be woken by progress events too."""
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event.set, progress)
        self._add(job_id, entry)
        try:
            yield event
        finally:
            self._remove(job_id, entry)

    def watch(self, job_id: str) -> JobWatch:
        """A long-poll's lighter subscription to the job's state events (`with` it, before
        reading the job): a future per wait instead of an Event, a task or a generator, since
        thousands of them are held at once."""
        return JobWatch(self, job_id, asyncio.get_running_loop())

    def _add(self, job_id: str, waiter: _Waiter) -> None:
        with self._lock:
            self._waiters[job_id].add(waiter)

    def _remove(self, job_id: str, waiter: _Waiter) -> None:
        with self._lock:
            waiters = self._waiters.get(job_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[job_id]

    def publish_credentials_changed(self) -> None:
        """A key or an account changed (after its commit): every process drops what it cached
        of callers. Callable from any thread."""
        try:
            if self._credentials_marker is not None:
                self._credentials_marker.change()
        finally:
            self._credentials_changed()  # this process's own cache, whatever the marker said

    def on_credentials_changed(self, listener: Callable[[], None]) -> None:
        """`listener` is called (from any thread) on every credential event, and whenever
        events may have been missed."""
        self._credential_listeners.append(listener)

    def _credentials_changed(self) -> None:
        for listener in self._credential_listeners:
            listener()

    def receives_every_change(self) -> bool:
        """Whether every credential change of the deployment reaches this process now; a
        change made elsewhere since the last call is taken in first (listeners called)."""
        marker = self._credentials_marker
        if marker is None:
            return False
        seen = marker.read()
        if seen != self._marker_seen:
            self._marker_seen = seen
            self._credentials_changed()
        return True

    async def start(self) -> None:
        """Begin receiving events from elsewhere (nothing to do in-process)."""

    async def stop(self) -> None:
        """Stop receiving."""


class JobWatch:
    """One long-poll's registration for a job's state events, made with `JobEvents.watch`.

    Each `changed()` awaits one future, set by the next state event or expired by a timer
    handle; it is replaced before `changed()` returns, so a change while the caller reads the
    job again is kept for the next call. `woken_at` is the ordinal of the last wake (see
    `begun_after`)."""

    __slots__ = ("_changed", "_entry", "_events", "_job_id", "_loop", "woken_at")

    def __init__(self, events: JobEvents, job_id: str, loop: asyncio.AbstractEventLoop) -> None:
        self._events = events
        self._job_id = job_id
        self._loop = loop
        self._changed: asyncio.Future[bool] = loop.create_future()
        self._entry: _Waiter = (loop, self._wake, False)
        self.woken_at = -1

    def __enter__(self) -> JobWatch:
        self._events._add(self._job_id, self._entry)
        return self

    def __exit__(self, *_: object) -> None:
        self._events._remove(self._job_id, self._entry)

    def _wake(self) -> None:
        self.woken_at = next(_ordinals)
        if not self._changed.done():
            self._changed.set_result(True)

    async def changed(self, deadline: float) -> bool:
        """True once the job changed since the last call (at once if it already has), False
        when the loop's clock reaches `deadline` first."""
        changed = self._changed
        if not changed.done():
            timer = self._loop.call_at(deadline, _expire, changed)
            try:
                await changed
            finally:
                timer.cancel()
        self._changed = self._loop.create_future()
        return changed.result()


def _call_all(calls: list[Callable[[], None]]) -> None:
    for call in calls:
        call()


def _expire(changed: asyncio.Future[bool]) -> None:
    if not changed.done():
        changed.set_result(False)


def begun_after_wakes() -> int:
    """The ordinal of a read begun now: it sees every change whose wake has an ordinal below
    it (the change was committed before its event was sent), so any watch woken before it
    may take its answer instead of reading again."""
    return next(_ordinals)


class RedisJobEvents(JobEvents):
    def __init__(self, url: str, channel: str) -> None:
        super().__init__()
        self._url = url
        self.channel = channel
        self.credentials_channel = f"{channel}:credentials"
        self._publisher = redis.Redis.from_url(url)
        self._listener: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()
        # Set once Redis confirmed both subscriptions; cleared as soon as the connection fails.
        self._receiving = False

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

    def publish_credentials_changed(self) -> None:
        # Unlike a job event this one must not be lost: a revoked key would stay cached
        # elsewhere. A failure raises, so the command that changed the key says so.
        self._publisher.publish(self.credentials_channel, b"")
        self._credentials_changed()

    def receives_every_change(self) -> bool:
        return self._receiving

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._listen(), name="job-events")

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self) -> None:
        backoff = 0.1
        job_channel = self.channel.encode()
        credentials_channel = self.credentials_channel.encode()
        while True:
            client = aioredis.Redis.from_url(self._url)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel, self.credentials_channel)
                    self.subscribed.set()
                    backoff = 0.1
                    async for message in pubsub.listen():
                        kind = message.get("type")
                        channel = message.get("channel")
                        if kind == "message" and channel == job_channel:
                            data = message["data"].decode()
                            job_id = data.removesuffix(PROGRESS_SUFFIX)
                            self._wake(job_id, progress=job_id != data)
                        elif channel == credentials_channel:
                            if kind == "subscribe":
                                # Changes made while not subscribed were missed: start afresh.
                                self._credentials_changed()
                                self._receiving = True
                            elif kind == "message":
                                self._credentials_changed()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a dropped connection: reconnect with backoff
                self._receiving = False
                self.subscribed.clear()
                log.warning("job events: redis connection lost (%s); reconnecting", error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                self._receiving = False
                await client.aclose()


class CredentialsMarker:
    """A file of a few bytes that every process of an embedded deployment maps into memory
    (shared): a credential change writes new random bytes into it, and a process that reads
    bytes other than those it saw last takes that as the event. Every request reads it, so the
    read is a memory read, not a system call (a `stat` per request cost 5-8 us here); writes
    through a shared mapping reach every other mapping of the file at once (one page cache).

    The file's identity is checked at most once a `CHECK_SECONDS`: a marker replaced (an earlier
    release's CLI renamed a new one into place) or removed is mapped afresh, which counts as a
    change. A marker left by an earlier release (an empty file) is grown to size, and each
    change also touches the file's times, which is what an earlier release's gateway watches.
    A process that may not write the file maps it read-only (it cannot publish changes).
    """

    SIZE = 16
    CHECK_SECONDS = 1.0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._next_check = 0.0
        self._identity: tuple[int, int] | None = None
        self._mapping: mmap.mmap | None = None
        self._writable = False
        # While the file cannot be mapped, every read differs from the last: each one is taken
        # as a change, so nothing cached about callers is trusted.
        self._unmapped_reads = 0
        self._map()

    def read(self) -> tuple[object, bytes]:
        """The file's identity and its bytes: another value than the last means a change."""
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + self.CHECK_SECONDS
            self._map_again_if_replaced()
        if self._mapping is None:
            self._unmapped_reads += 1
            return None, self._unmapped_reads.to_bytes(8, "little")
        return self._identity, self._mapping[: self.SIZE]

    def change(self) -> None:
        self._map_again_if_replaced()
        if self._mapping is None or not self._writable:
            raise PermissionError(
                f"{self.path} cannot be written: the deployment's other processes are not told "
                "of this change (make it writable by every process of the deployment)"
            )
        self._mapping[: self.SIZE] = os.urandom(self.SIZE)
        os.utime(self.path)

    def _map_again_if_replaced(self) -> None:
        try:
            status = os.stat(self.path)
            identity: tuple[int, int] | None = (status.st_dev, status.st_ino)
        except OSError:
            identity = None
        if identity != self._identity or self._mapping is None:
            self._map()

    def _map(self) -> None:
        try:
            self._identity, self._mapping, self._writable = self._mapped()
        except OSError as error:
            if self._mapping is not None or self._unmapped_reads == 0:
                log.warning("credentials marker unusable, callers not cached: %s", error)
            self._identity, self._mapping, self._writable = None, None, False

    def _mapped(self) -> tuple[tuple[int, int], mmap.mmap, bool]:
        try:
            # Readable and writable by the deployment's processes as the umask allows.
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            access = mmap.ACCESS_WRITE
        except PermissionError:
            descriptor = os.open(self.path, os.O_RDONLY)
            access = mmap.ACCESS_READ
        try:
            status = os.fstat(descriptor)
            if status.st_size < self.SIZE:
                if access == mmap.ACCESS_READ:
                    raise PermissionError(f"{self.path} must be writable (it is not yet in use)")
                os.ftruncate(descriptor, self.SIZE)  # growing only: a writer's bytes stay
            mapping = mmap.mmap(descriptor, self.SIZE, access=access)
            return (status.st_dev, status.st_ino), mapping, access == mmap.ACCESS_WRITE
        finally:
            os.close(descriptor)


def job_events_for(
    broker_url: str, namespace: str, credentials_marker: Path | None = None
) -> JobEvents:
    """`credentials_marker`: see JobEvents (unused with Redis, which reaches every process)."""
    if broker_url.startswith(("redis://", "rediss://")):
        return RedisJobEvents(broker_url, f"{namespace}:job-events")
    return JobEvents(credentials_marker)
