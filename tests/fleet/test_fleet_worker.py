"""`sfumato worker` under Kubernetes' termination: SIGTERM mid-job finishes the job within the
queue's grace period, or hands it back (pending again, republished, no attempt spent); the job
is never lost and charged once."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.testkit.waits import wait_until
from tests.conftest import COMMON_ENV
from tests.support.fleet import Fleet, config_file, running_fleet
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.stored_rows import job_row, ledger_kinds

pytestmark = [pytest.mark.slow, pytest.mark.whole_machine, pytest.mark.distributed]


@pytest.fixture(scope="module")
def fleet(
    postgres_database: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    folder: Path = tmp_path_factory.mktemp("fleet-worker")
    env = {**COMMON_ENV, "SFUMATO_DATABASE_URL": postgres_database, "SFUMATO_BROKER_URL": redis_url}
    with running_fleet(env, folder, gateways=1) as fleet:
        yield fleet


def test_sigterm_lets_the_running_job_finish_within_the_grace_period(fleet: Fleet) -> None:
    worker = fleet.add_worker("image")
    worker.wait_for_log(" ready.")
    key = fleet.new_key(credits=100)
    with fleet.client(fleet.gateways[0], key) as client:
        job = create(client, "[sleep 2] finishes during shutdown", quality="low")
        wait_until(lambda: status_of(client, job["id"]) == "processing", 20, "processing")
        started = time.monotonic()
        worker.kill(signal.SIGTERM)
        stopped_after = time.monotonic() - started
        assert worker.popen is not None and worker.popen.returncode == 0
        assert wait_done(client, job["id"])["status"] == "completed"
    # It waited for the job (about 2 s), not for the 25 s grace period.
    assert stopped_after < 15, stopped_after
    assert job_row(fleet.services, job["id"]).attempts == 1
    assert fleet.balance(key) == 100 - 1
    assert ledger_kinds(fleet.services, key) == ["grant", "reserve", "settle"]


def test_sigterm_hands_back_a_job_that_outlasts_the_grace_period(fleet: Fleet) -> None:
    short_grace = config_file(fleet.folder, {"queues": {"image": {"shutdown_grace_seconds": 0.5}}})
    worker = fleet.add_worker("image", env={"SFUMATO_CONFIG_FILE": str(short_grace)})
    worker.wait_for_log(" ready.")
    key = fleet.new_key(credits=100)
    with fleet.client(fleet.gateways[0], key) as client:
        job = create(client, "[sleep 4] outlasts the grace period", quality="low")
        wait_until(lambda: status_of(client, job["id"]) == "processing", 20, "processing")
        worker.kill(signal.SIGTERM)
        assert worker.popen is not None and worker.popen.returncode == 0
        row = job_row(fleet.services, job["id"])
        assert (row.status, row.attempts, row.claim_token) == ("pending", 0, None)
        assert row.dispatched_at is not None, "republished for another worker"
        assert "handed back for another worker" in worker.log.read_text()
        fleet.add_worker("image").wait_for_log(" ready.")
        assert wait_done(client, job["id"])["status"] == "completed"
    assert job_row(fleet.services, job["id"]).attempts == 1
    assert fleet.balance(key) == 100 - 1
    assert ledger_kinds(fleet.services, key) == ["grant", "reserve", "settle"]
