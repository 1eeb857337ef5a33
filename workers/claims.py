"""Taking a job and keeping it: the claim (retried through a database blip) and the lease keeper
that renews it while the pipeline runs and notices when the job is no longer this worker's."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
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
    """Renews the job's lease in the background and notices a cancel or a lost claim.

    `progress` (the job's, 0..1) only reads a flag this thread sets, so checking for cancel at
    every step costs nothing. The thread reads the claim a few times a second (a read, which
    never waits for writers) and writes the lease only every third of its length, or sooner
    when the progress moved on and `progress_seconds` passed since the last write (so clients
    see it move about once a second while a pipeline reports hundreds of steps a second, and
    running jobs do not crowd the database's write lock).
    """

    def __init__(self, lifecycle: JobLifecycle, claim: jobs_service.Claim) -> None:
        self._lifecycle = lifecycle
        self._claim = claim
        self._fraction = 0.0
        self._lost = threading.Event()
        self._stop = threading.Event()
        settings = lifecycle.services.settings
        self._progress_interval = settings.progress_seconds
        self._check_interval = min(0.2, settings.lease_seconds / 4, settings.progress_seconds / 4)
        self._renew_interval = settings.lease_seconds / 3
        self._thread = threading.Thread(
            target=self._run, name=f"lease-{claim.job.id[:8]}", daemon=True
        )

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        renewed_at = time.monotonic()
        written = 0.0
        while not self._stop.wait(self._check_interval):
            try:
                fraction = self._fraction
                since = time.monotonic() - renewed_at
                if since >= self._renew_interval or (
                    fraction > written and since >= self._progress_interval
                ):
                    alive = self._lifecycle.renew_lease(self._claim, fraction)
                    renewed_at = time.monotonic()
                    written = fraction
                else:
                    alive = self._lifecycle.holds_claim(self._claim)
            except Exception as error:  # the database blinked: the lease outlives a blink
                log.warning("could not renew the lease of job %s: %s", self._claim.job.id, error)
                continue
            if not alive:
                self._lost.set()
                return

    def progress(self, fraction: float, message: str | None = None) -> None:
        self._fraction = max(0.0, min(1.0, fraction))
        if self._lost.is_set():
            raise Cancelled()
