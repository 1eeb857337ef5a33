"""A worker's graceful shutdown around a claim: a job whose claim is being made when SIGTERM
lands gets the grace period too, and is handed back when it outlasts it (the race
tests/fleet/test_fleet_worker.py's SIGTERM test met about once in seven runs)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from core.jobs import service as jobs_service
from workers.shutdown import GracefulShutdown, InFlight


class HandBacks:
    """A lifecycle that only records which claims were handed back."""

    def __init__(self) -> None:
        self.claims: list[jobs_service.Claim] = []
        self.done = threading.Event()

    def hand_back(self, claim: jobs_service.Claim) -> bool:
        self.claims.append(claim)
        self.done.set()
        return True


def test_a_claim_being_made_at_sigterm_gets_the_grace_and_is_handed_back() -> None:
    in_flight = InFlight()
    lifecycle = HandBacks()
    shutdown = GracefulShutdown(lifecycle, in_flight, 0.3, exit_process=lambda _: None)  # type: ignore[arg-type]
    committed, sigterm = threading.Event(), threading.Event()
    claim = jobs_service.Claim(job=SimpleNamespace(id="job-1"), token="token-1")  # type: ignore[arg-type]

    def make_claim() -> Any:
        committed.set()  # the job is `processing` for everyone from here
        assert sigterm.wait(5)
        return claim

    def run_job() -> None:
        with in_flight.tracking(make_claim) as claimed:
            assert claimed is claim
            # The pipeline runs until its claim is taken from it.
            assert lifecycle.done.wait(5)

    job = threading.Thread(target=run_job)
    job.start()
    assert committed.wait(5)
    stopping = threading.Thread(target=shutdown.run, args=(0.3,))
    stopping.start()
    assert in_flight.running() == 1, "a claim being made counts as running"
    sigterm.set()
    stopping.join(10)
    job.join(10)
    assert lifecycle.claims == [claim]
    assert in_flight.running() == 0 and in_flight.wait_idle(0)


def test_a_delivery_with_nothing_to_claim_leaves_the_worker_idle() -> None:
    in_flight = InFlight()
    with in_flight.tracking(lambda: None) as claimed:
        assert claimed is None
    assert in_flight.running() == 0 and in_flight.wait_idle(0)
