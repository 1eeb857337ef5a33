"""Settling a job once its work is over: completed (result, media and other rows saved, the
charge settled, all in one transaction), abandoned (cancelled or taken over meanwhile: its files
deleted), or failed (refunded in full, with a message the client can act on). Each end is logged
and timed in the worker metrics."""

from __future__ import annotations

import logging
import resource
import time

from core.jobs import service as jobs_service
from core.jobs.lifecycle import JobLifecycle
from core.storage import StorageError
from core.tables import JobRow, Media
from pipelines.base import OutOfDeviceMemory
from pipelines.styles import SiteUnavailable
from workers import metrics
from workers.claims import ClaimLost, through_database_blips
from workers.operations import InputUnavailable
from workers.storing import Outcome, OutputStore

log = logging.getLogger(__name__)
# Failures a user's input explains (a site that cannot be reached or rendered).
EXPECTED_FAILURES = (SiteUnavailable,)


class Settlement:
    def __init__(self, lifecycle: JobLifecycle, store: OutputStore) -> None:
        self.lifecycle = lifecycle
        self.store = store

    def complete(self, claim: jobs_service.Claim, outcome: Outcome, started: float) -> None:
        """Raises ClaimLost when the job stopped being this worker's before it could complete."""
        job = claim.job
        # The output is stored: a database blink now must not throw it away and fail the job.
        completed = through_database_blips(
            f"completing job {job.id}",
            lambda: self.lifecycle.complete(
                claim, outcome.result, outcome.media, outcome.message, outcome.save
            ),
        )
        if not completed:
            raise ClaimLost()
        if outcome.saved is not None:
            outcome.saved()
        log.info(
            "job %s %s completed in %.2fs, peak rss %d MiB",
            job.id,
            job.operation,
            time.perf_counter() - started,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        )
        metrics.job_ended(job.operation, "completed", time.perf_counter() - started)

    def abandon(self, job: JobRow, stored: list[Media], started: float) -> None:
        log.info("job %s was cancelled or taken over; its output is discarded", job.id)
        self.store.discard(stored)
        metrics.job_ended(job.operation, "abandoned", time.perf_counter() - started)

    def fail(
        self, claim: jobs_service.Claim, error: Exception, stored: list[Media], started: float
    ) -> None:
        job = claim.job
        message = failure_message(error)
        if isinstance(error, EXPECTED_FAILURES):
            # The caller's input, not a fault here: one line, no traceback.
            log.warning("job %s failed: %s", job.id, message)
        else:
            log.error("job %s failed", job.id, exc_info=error)
        self.store.discard(stored)
        through_database_blips(f"failing job {job.id}", lambda: self.lifecycle.fail(claim, message))
        metrics.job_ended(job.operation, "failed", time.perf_counter() - started)


def failure_message(error: Exception) -> str:
    """What the client reads on a failed job: the cause when it is theirs to know, and the
    refund."""
    if isinstance(error, SiteUnavailable):
        return f"Could not extract a style: {error}; the credits were refunded"
    if isinstance(error, InputUnavailable):
        return "Could not read an input image; the credits were refunded"
    if isinstance(error, StorageError):
        return "Could not store the result; the credits were refunded"
    if isinstance(error, OutOfDeviceMemory):
        return f"The GPU ran out of memory ({error}); the credits were refunded"
    if isinstance(error, MemoryError):
        return "Ran out of memory; the credits were refunded"
    return "Generation failed; the credits were refunded"
