"""Graceful shutdown of a worker process (Kubernetes sends SIGTERM, then SIGKILL).

On SIGTERM Celery stops taking messages and waits for the running jobs. `GracefulShutdown`
gives them `grace_seconds` to finish; a job still running then is handed back: its row goes back
to `pending` under a compare-and-set on this worker's claim (the attempt it spent is given
back), it is published again for another worker, and the pipeline here stops at its next
`progress()` call (the lease keeper sees the claim gone). A pipeline that never calls
`progress()` cannot be stopped from outside, so after a short drain the process exits anyway:
the job is already safe in the database.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from celery.signals import worker_shutting_down

from core.jobs import service as jobs_service
from core.jobs.lifecycle import JobLifecycle

log = logging.getLogger(__name__)
# After handing jobs back, how long their threads get to notice before the process exits.
DRAIN_SECONDS = 5.0


class ShuttingDown(Exception):
    """A job delivered after this worker began shutting down: for another worker to run."""


class InFlight:
    """The claims this worker process is running now, and whether it still takes new ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[str, jobs_service.Claim] = {}
        # Claims being made now: their jobs may already be `processing` for everyone else.
        self._claiming = 0
        self._idle = threading.Condition(self._lock)
        # Set when shutdown begins: Celery may still deliver a message to a free slot (the very
        # job just handed back, even), which must go back to the queue, not run here.
        self.closed = threading.Event()

    @contextmanager
    def tracking(
        self, make_claim: Callable[[], jobs_service.Claim | None]
    ) -> Iterator[jobs_service.Claim | None]:
        """The claim `make_claim` makes (None: nothing to run), tracked until the block ends.
        A claim being made counts as running from before its commit: a SIGTERM landing
        between the commit and the tracking found the worker idle, and the job then ran on past
        the grace period, never handed back."""
        with self._lock:
            self._claiming += 1
        claim: jobs_service.Claim | None = None
        try:
            claim = make_claim()
        finally:
            with self._lock:
                self._claiming -= 1
                if claim is not None:
                    self._claims[claim.token] = claim
                self._idle.notify_all()
        try:
            yield claim
        finally:
            if claim is not None:
                with self._lock:
                    self._claims.pop(claim.token, None)
                    self._idle.notify_all()

    def claims(self) -> list[jobs_service.Claim]:
        with self._lock:
            return list(self._claims.values())

    def running(self) -> int:
        """Jobs running or being claimed."""
        with self._lock:
            return len(self._claims) + self._claiming

    def wait_claims_made(self, timeout: float) -> None:
        """Until no claim is being made, `timeout` seconds at most."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._claiming and (remaining := deadline - time.monotonic()) > 0:
                self._idle.wait(remaining)

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing runs; False if something still runs after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._claims or self._claiming:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
            return True


class GracefulShutdown:
    def __init__(
        self,
        lifecycle: JobLifecycle,
        in_flight: InFlight,
        grace_seconds: float,
        exit_process: Callable[[int], Any] = os._exit,
    ) -> None:
        self.lifecycle = lifecycle
        self.in_flight = in_flight
        self.grace_seconds = grace_seconds
        self._exit_process = exit_process
        self._started = threading.Event()

    def install(self) -> None:
        """Start the grace period when Celery begins its shutdown (in its signal handler)."""
        worker_shutting_down.connect(self._on_shutting_down, weak=False)

    def _on_shutting_down(self, sig: str = "", how: str = "", **_: Any) -> None:
        if self._started.is_set():
            return
        self._started.set()
        self.in_flight.closed.set()
        # A cold shutdown (SIGQUIT, a second SIGINT) does not wait for anything.
        grace = self.grace_seconds if how == "Warm" else 0.0
        log.info("%s: %d job(s) running get %.1fs to finish", sig, self.in_flight.running(), grace)
        threading.Thread(target=self.run, args=(grace,), name="shutdown", daemon=True).start()

    def run(self, grace: float) -> None:
        if self.in_flight.wait_idle(grace):
            return
        # A claim still being made (a database blip retried) is handed back with the others.
        self.in_flight.wait_claims_made(DRAIN_SECONDS)
        handed_back = self.hand_back_all()
        if not self.in_flight.wait_idle(DRAIN_SECONDS):
            log.warning("a pipeline did not stop after its job was handed back; exiting anyway")
            self._exit_process(0)
        log.info("handed back %d job(s)", handed_back)

    def hand_back_all(self) -> int:
        handed_back = 0
        for claim in self.in_flight.claims():
            try:
                if not self.lifecycle.hand_back(claim):
                    continue  # it finished, failed or was cancelled meanwhile
            except Exception:
                # The database is out of reach: the lease lapses and the sweep hands it out.
                log.exception("could not hand back job %s", claim.job.id)
                continue
            handed_back += 1
        return handed_back
