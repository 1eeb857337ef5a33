"""Taking a job and keeping it: the claim (retried through a database blip) and the leases, kept
while the pipelines run by one thread that notices when a job is no longer this worker's."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from core.db import DATABASE_UNAVAILABLE
from core.ids import new_id
from core.jobs import service as jobs_service
from core.jobs.lifecycle import JobLifecycle
from pipelines.base import Cancelled

log = logging.getLogger(__name__)
# About ten seconds of a database out of reach before a claim or a settlement gives up.
DATABASE_ATTEMPTS = 8

T = TypeVar("T")


class ClaimLost(Exception):
    """The job was cancelled or handed to another worker while this one ran it."""


def through_database_blips(what: str, action: Callable[[], T]) -> T:
    """`action`, tried again while the database is briefly out of reach (a dropped connection,
    a failover). Only for actions a retry cannot do twice: claims and settlements carry this
    delivery's claim token, so an attempt whose commit landed but whose answer was lost is
    recognised by the next as its own."""
    delay = 0.2
    for _ in range(DATABASE_ATTEMPTS - 1):
        try:
            return action()
        except DATABASE_UNAVAILABLE as error:
            log.warning("%s failed (%s); retrying", what, type(error).__name__)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    return action()


def claim_job(lifecycle: JobLifecycle, job_id: str) -> jobs_service.Claim | None:
    """The claim, or None when the job is not (or no longer) pending; tried again through a
    database blip: giving up acknowledges the message, and the sweep would only republish the
    job minutes later. Every attempt claims with one token, this delivery's: when an attempt's
    commit succeeded but its answer was lost, the next finds the claim its own and goes on at
    once, not after the lease."""
    token = new_id()
    return through_database_blips(f"claiming job {job_id}", lambda: lifecycle.claim(job_id, token))


class LeaseKeeper:
    """One job's lease as `Leases` keeps it: `progress` (the job's, 0..1) only records the
    fraction and reads a flag the keeping thread sets, so checking for cancel at every step
    costs nothing."""

    def __init__(self, claim: jobs_service.Claim) -> None:
        self.claim = claim
        self.fraction = 0.0
        self.lost = threading.Event()
        self.checked_at = self.renewed_at = time.monotonic()
        self.written = 0.0
        # An end of the job's claim was heard (set and cleared under `Leases._changed`).
        self.claim_end_heard = False

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.fraction = max(0.0, min(1.0, fraction))
        if self.lost.is_set():
            raise Cancelled()


class Leases:
    """Renews the leases of the jobs this process runs and notices a cancel or a lost claim:
    one thread for all of them, started with the first, so a job costs no thread of its own.

    The thread writes each lease every third of its length, or sooner when the progress moved
    on and `progress_seconds` passed since the last write (so clients see it move about once a
    second while a pipeline reports hundreds of steps a second, and running jobs do not crowd
    the database's write lock); a write finds a claim gone. Between writes, a cancel (or a hand
    back) reaches it as an event (`JobEvents.on_claim_ended`, over Redis in a fleet) and the
    claim is read then, at once; only while the events cannot be relied on (the in-process bus,
    or the Redis subscription down) does it read every claim a few times a second instead. A
    cancel whose event was lost is still noticed at the next write: the database stays the
    truth.
    """

    def __init__(self, lifecycle: JobLifecycle) -> None:
        self._lifecycle = lifecycle
        settings = lifecycle.services.settings
        self._events = lifecycle.services.events
        self._progress_interval = settings.progress_seconds
        self._check_interval = min(0.2, settings.lease_seconds / 4, settings.progress_seconds / 4)
        self._renew_interval = settings.lease_seconds / 3
        self._kept: set[LeaseKeeper] = set()
        self._changed = threading.Condition()
        # A claim end was heard since the thread last looked: it looks again without waiting.
        self._woken = False
        self._thread: threading.Thread | None = None
        self._events.on_claim_ended(self._claim_end_heard)

    @contextmanager
    def keep(self, claim: jobs_service.Claim) -> Iterator[LeaseKeeper]:
        """The claim's lease kept while the block runs."""
        keeper = LeaseKeeper(claim)
        with self._changed:
            self._kept.add(keeper)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="leases", daemon=True)
                self._thread.start()
            self._changed.notify()
        try:
            yield keeper
        finally:
            with self._changed:
                self._kept.discard(keeper)

    def _claim_end_heard(self, job_id: str | None) -> None:
        """A claim end of `job_id` (None: of any job, some may have been missed): the claims it
        may have ended are read at once."""
        with self._changed:
            for keeper in self._kept:
                if job_id is None or keeper.claim.job.id == job_id:
                    keeper.claim_end_heard = True
                    self._woken = True
            if self._woken:
                self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._kept:
                    self._changed.wait()
                kept = list(self._kept)
                heard = {keeper for keeper in kept if keeper.claim_end_heard}
                for keeper in heard:
                    keeper.claim_end_heard = False
            for keeper in kept:
                self._look_after(keeper, keeper in heard)
            with self._changed:
                if not self._woken:
                    self._changed.wait(self._check_interval)
                self._woken = False

    def _look_after(self, keeper: LeaseKeeper, claim_end_heard: bool) -> None:
        now = time.monotonic()
        if keeper.lost.is_set():
            return
        if not claim_end_heard and now - keeper.checked_at < self._check_interval:
            return
        keeper.checked_at = now
        fraction = keeper.fraction
        since = now - keeper.renewed_at
        try:
            if since >= self._renew_interval or (
                fraction > keeper.written and since >= self._progress_interval
            ):
                alive = self._lifecycle.renew_lease(keeper.claim, fraction)
                keeper.renewed_at = time.monotonic()
                keeper.written = fraction
            elif claim_end_heard or not self._events.hears_every_claim_end():
                alive = self._lifecycle.holds_claim(keeper.claim)
            else:
                return
        except Exception as error:  # the database blinked: the lease outlives a blink
            log.warning("could not renew the lease of job %s: %s", keeper.claim.job.id, error)
            if claim_end_heard:
                with self._changed:  # read again at the next look
                    keeper.claim_end_heard = True
            return
        if not alive:
            keeper.lost.set()
