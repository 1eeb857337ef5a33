"""The webhooks' dense parts as units: signatures as the Standard Webhooks library makes them,
the back-off's bounds, and claims of the outbox that never hand one delivery to two deliverers
(PostgreSQL's SKIP LOCKED) nor twice to one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from core.accounts.service import create_account, sync_plans
from core.clock import utcnow
from core.db import Database
from core.ids import new_id
from core.jobs.requests import GenerateRequest
from core.settings import Settings
from core.tables import JobRow
from core.webhooks import repository
from core.webhooks.deliverer import WebhookDeliverer, retry_delay
from core.webhooks.signing import new_secret, signature
from tests.conftest import fresh_postgres_database
from tests.support.service import wait_until
from tests.support.webhook_receiver import webhook_receiver


def test_a_signature_is_the_one_the_standard_webhooks_library_makes() -> None:
    secret = new_secret()
    moment = datetime(2026, 11, 28, 5, 20, 38, tzinfo=UTC)
    body = '{"type":"job.completed","data":{"id":"x"}}'
    expected = Webhook(secret).sign("msg-1", moment, body)
    assert signature(secret, "msg-1", int(moment.timestamp()), body.encode()) == expected


def test_the_back_off_doubles_from_the_base_up_to_its_cap_each_jittered_down_by_half() -> None:
    settings = Settings(webhook_retry_base_seconds=5, webhook_retry_max_delay_seconds=3600)
    for attempts, ceiling in ((1, 5), (2, 10), (3, 20), (10, 2560), (11, 3600), (500, 3600)):
        delays = [retry_delay(settings, attempts) for _ in range(200)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays), attempts
        assert len(set(delays)) > 100  # jittered, not fixed


def test_a_create_without_a_webhook_hashes_as_before_webhooks() -> None:
    """An Idempotency-Key sent before the upgrade, sent again after it, is still a replay."""
    request = GenerateRequest.from_fields({"prompt": "a fox"})
    assert "webhook" not in request.wire()
    hooked = GenerateRequest.from_fields({"prompt": "a fox", "webhook": {"url": "https://a.b/"}})
    assert hooked.wire()["webhook"] == {"url": "https://a.b/", "events": None}


def _database_with_deliveries(
    url: str, count: int, to: str = "https://example.com/hook"
) -> tuple[Database, list[str]]:
    db = Database(url)
    db.migrate()
    sync_plans(db, Settings().service_config())
    account = create_account(db, f"{new_id()}@test.local", "pro", 10)
    with db.write() as session:
        repository.set_account_secret(session, account.id, new_secret())
    moment = utcnow() - timedelta(seconds=1)
    ids = [new_id() for _ in range(count)]
    with db.write() as session:
        job = JobRow(
            id=new_id(),
            account_id=account.id,
            type="image.generate",
            operation="generate",
            queue="image",
            status="completed",
            inputs={},
            created_at=moment,
        )
        session.add(job)
        session.flush()
        repository.add_deliveries(
            session,
            [
                {
                    "id": delivery_id,
                    "account_id": account.id,
                    "job_id": job.id,
                    "source": "job",
                    "endpoint_id": None,
                    "url": to,
                    "event": "completed",
                    "job_state": {
                        "id": job.id,
                        "type": job.type,
                        "status": job.status,
                        "createdAt": "2026-11-28T05:20:38.123Z",
                        "result": None,
                        "error": None,
                        "progress": 1.0,
                        "message": None,
                    },
                    "status": repository.PENDING,
                    "attempts": 0,
                    "next_attempt_at": moment,
                    "created_at": moment,
                }
                for delivery_id in ids
            ],
        )
    return db, ids


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sfumato.db'}"
        return
    with fresh_postgres_database() as url:
        yield url


def test_a_claimed_delivery_is_nobody_elses_until_its_claim_runs_out(database_url: str) -> None:
    db, ids = _database_with_deliveries(database_url, 5)
    try:
        now = utcnow()
        until = now + timedelta(seconds=60)
        with db.write() as session:
            first = [d.id for d in repository.claim_due(session, now, until, 3)]
        with db.write() as session:
            second = [d.id for d in repository.claim_due(session, now, until, 10)]
        with db.write() as session:
            assert repository.claim_due(session, now, until, 10) == []
        assert len(first) == 3 and set(first) | set(second) == set(ids)
        assert not set(first) & set(second)
        with db.write() as session:
            again = repository.claim_due(session, until + timedelta(seconds=1), until, 10)
        assert {d.id for d in again} == set(ids)
    finally:
        db.dispose()


def test_two_deliverers_claiming_at_once_on_postgresql_take_different_rows() -> None:
    """The first claim's transaction is still open (its rows locked) when the second claims:
    the second skips them without waiting, and takes the rest."""
    with fresh_postgres_database() as url:
        db, ids = _database_with_deliveries(url, 6)
        try:
            now = utcnow()
            until = now + timedelta(seconds=60)
            with db.write() as first_session:
                first = [d.id for d in repository.claim_due(first_session, now, until, 4)]
                with db.write() as second_session:
                    second = [d.id for d in repository.claim_due(second_session, now, until, 10)]
            assert len(first) == 4 and len(second) == 2
            assert set(first) | set(second) == set(ids)
        finally:
            db.dispose()


class _Counted:
    def __init__(self) -> None:
        self.outcomes: list[str] = []

    def webhook_sent(self, latency_seconds: float, attempt_seconds: float) -> None:
        self.outcomes.append("sent")

    def webhook_retried(self, attempt_seconds: float) -> None:
        self.outcomes.append("retried")

    def webhook_failed(self) -> None:
        self.outcomes.append("failed")


def test_a_delivery_whose_deliverer_died_after_claiming_it_is_sent_by_another(
    tmp_path: Path,
) -> None:
    """A deliverer killed between its claim and its send (its process gone) leaves the row
    claimed: another deliverer leaves it alone until the claim runs out, then sends it."""
    settings = Settings(fetch_allow="127.0.0.1", webhook_claim_seconds=1.0)
    with webhook_receiver() as receiver:
        db, (delivery_id,) = _database_with_deliveries(
            f"sqlite:///{tmp_path / 'sfumato.db'}", 1, receiver.url("/dead")
        )
        try:
            observer = _Counted()
            render = lambda event, moment, job: b"{}"  # noqa: E731
            dying = WebhookDeliverer(db, settings, render, observer)
            survivor = WebhookDeliverer(db, settings, render, observer)
            # Its claim commits; its process dies before the send.
            assert len(dying._claim()) == 1
            assert survivor.run_once() == 0
            wait_until(lambda: survivor.run_once() == 1, 30, "the claim ran out and it was sent")
            (received,) = receiver.of("/dead")
            assert received.headers["webhook-id"] == delivery_id
            assert observer.outcomes == ["sent"]
        finally:
            db.dispose()


def test_a_delivery_failing_past_its_retry_window_is_marked_failed(tmp_path: Path) -> None:
    """Retried with back-off while its window lasts (3 s from the event, a second ago), then
    given up: `failed`, counted so."""
    settings = Settings(
        fetch_allow="127.0.0.1",
        webhook_retry_base_seconds=0.05,
        webhook_retry_max_delay_seconds=0.1,
        webhook_retry_for_seconds=3.0,
    )
    with webhook_receiver() as receiver:
        receiver.answer("/down", *([500] * 10_000))
        db, (delivery_id,) = _database_with_deliveries(
            f"sqlite:///{tmp_path / 'sfumato.db'}", 1, receiver.url("/down")
        )
        try:
            observer = _Counted()
            deliverer = WebhookDeliverer(db, settings, lambda event, moment, job: b"{}", observer)

            def given_up() -> bool:
                deliverer.run_once()
                with db.read() as session:
                    delivery = repository.get_delivery(session, delivery_id)
                    return delivery is not None and delivery.status == repository.FAILED

            wait_until(given_up, 30, "the delivery given up")
            tries = len(receiver.of("/down"))
            assert tries >= 3
            assert observer.outcomes == ["retried"] * (tries - 1) + ["failed"]
        finally:
            db.dispose()
