"""The job event bus of one process: waiters per job woken by state and progress events, and
the interface every bus has (`JobEvents`); in-process delivery for embedded mode, where the
credential events travel through the marker beside the database (`credentials.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

from core.events.credentials import CredentialsMarker

log = logging.getLogger(__name__)
# A job's waiter: its event loop, the callable that wakes it there, whether progress wakes it.
_Waiter = tuple[asyncio.AbstractEventLoop, Callable[[], None], bool]
# Ordinal of each wake delivered to a watch and of each read begun after wakes (`JobWatch`).
_ordinals = itertools.count()


def queue_moved_key(queue: str) -> str:
    """The bus's key of "the queue moved on" (one of its jobs started, or left it pending): the
    event streams of its pending jobs wait on it beside their own job's (their positions moved).
    Sent and received as a progress event of that key, which no job id can be."""
    return f"queue:{queue}"


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
        self._claim_end_listeners: list[Callable[[str | None], None]] = []

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

    def publish_started(self, job_id: str) -> None:
        """A worker claimed the job (pending -> processing). Sent as a progress event: event
        streams show the change, while long-polls, which wait for the job's end, are not woken
        to read a job that has not ended (a read per job spared). Callable from any thread."""
        self.publish_progress(job_id)

    def publish_queue_moved(self, queue: str) -> None:
        """A job of `queue` started or left it while pending. Callable from any thread."""
        self.publish_progress(queue_moved_key(queue))

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

    @contextlib.contextmanager
    def subscribe_queue(self, queue: str, event: asyncio.Event) -> Iterator[None]:
        """Set `event` (a stream's, from `subscribe`) when `queue` moves on, too."""
        entry = (asyncio.get_running_loop(), event.set, True)
        key = queue_moved_key(queue)
        self._add(key, entry)
        try:
            yield
        finally:
            self._remove(key, entry)

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

    def publish_claim_ended(self, job_id: str) -> None:
        """The job is no longer its worker's to run (after the commit: cancelled, or handed
        back): the worker running it, if any, stops now rather than at its next lease renewal.
        Callable from any thread."""
        self._claim_ended(job_id)

    def on_claim_ended(self, listener: Callable[[str | None], None]) -> None:
        """`listener(job_id)` is called (from any thread) on every claim end this process hears
        of, and `listener(None)` whenever some may have been missed: any claim may have ended."""
        self._claim_end_listeners.append(listener)

    def hears_every_claim_end(self) -> bool:
        """Whether every claim end of the deployment reaches the `on_claim_ended` listeners now.
        Not in-process: this bus hears only its own process's, and cannot tell whether other
        processes (reaching the database) cancel jobs too."""
        return False

    def _claim_ended(self, job_id: str | None) -> None:
        for listener in self._claim_end_listeners:
            listener(job_id)

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
