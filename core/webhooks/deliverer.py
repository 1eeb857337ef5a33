"""The deliverer: sends the outbox's due deliveries, records each attempt, and schedules the
next one (exponential back-off with jitter) until the retry window closes.

Any number of deliverers may run at once, in any processes (every gateway runs one): each
claims a batch of due rows in a short transaction (`repository.claim_due`: `FOR UPDATE SKIP
LOCKED` on PostgreSQL), pushing their next attempt time past the send, then sends without
holding a lock, then records the outcome. A deliverer that dies mid-send leaves its rows to be
claimed again once that time passes: delivery is at least once, and every attempt of a delivery
carries the same `webhook-id` so that receivers can drop repeats."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.orm import Session

from core.clock import isoformat_ms, utcnow
from core.db import DATABASE_UNAVAILABLE, Database
from core.fetch import FetchRefused, post
from core.settings import Settings
from core.tables import WebhookAttempt
from core.webhooks import repository
from core.webhooks.events import JobSnapshot
from core.webhooks.service import delivery_policy
from core.webhooks.signing import signed_headers

log = logging.getLogger(__name__)
BATCH = 32
SENDERS = 8

# The body of one delivery: the event, the moment it is sent, and the job as it was.
RenderPayload = Callable[[str, datetime, JobSnapshot], bytes]


class DeliveryObserver(Protocol):
    """Where the outcomes are counted (the process's metrics)."""

    def webhook_sent(self, latency_seconds: float, attempt_seconds: float) -> None: ...

    def webhook_retried(self, attempt_seconds: float) -> None: ...

    def webhook_failed(self) -> None: ...


@dataclass(frozen=True)
class _Claimed:
    id: str
    url: str
    event: str
    job_state: JobSnapshot
    secret: str | None
    endpoint_id: str | None
    created_at: datetime
    attempts: int


@dataclass(frozen=True)
class _Outcome:
    moment: datetime
    seconds: float
    status_code: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def retry_delay(settings: Settings, attempts: int) -> float:
    """Seconds before the next try after `attempts` failed ones: doubling from the base, capped,
    each jittered down by up to a half so that a receiver's many waiting deliveries spread."""
    ceiling = min(
        settings.webhook_retry_max_delay_seconds,
        settings.webhook_retry_base_seconds * 2 ** min(attempts - 1, 40),
    )
    return ceiling * (0.5 + random.random() / 2)


class WebhookDeliverer:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        render: RenderPayload,
        observer: DeliveryObserver,
    ) -> None:
        self.db = db
        self.settings = settings
        self.render = render
        self.observer = observer
        self.policy = delivery_policy(settings)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._senders = ThreadPoolExecutor(SENDERS, thread_name_prefix="webhook-send")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="webhook-deliverer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops claiming; sends under way finish (each within the fetch timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.settings.fetch_timeout_seconds + 5)
        self._senders.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                sent = self.run_once()
            except DATABASE_UNAVAILABLE as error:
                log.warning("webhook deliveries wait for the database: %s", error)
                sent = 0
            except Exception:
                log.exception("the webhook deliverer's pass failed")
                sent = 0
            # A full batch means more are due: no pause.
            if sent < BATCH:
                self._stop.wait(self.settings.webhook_poll_seconds)

    def run_once(self) -> int:
        """Claim the due deliveries (a batch), send them side by side, record each; returns
        how many were claimed."""
        claimed = self._claim()
        if claimed:
            list(self._senders.map(self._deliver, claimed))
        return len(claimed)

    def _claim(self) -> list[_Claimed]:
        moment = utcnow()
        until = moment + timedelta(seconds=self.settings.webhook_claim_seconds)
        with self.db.write() as session:
            due = repository.claim_due(session, moment, until, BATCH)
            secrets = repository.secrets_for(session, due) if due else {}
            return [
                _Claimed(
                    id=d.id,
                    url=d.url,
                    event=d.event,
                    job_state=JobSnapshot.of_stored(d.job_state),
                    secret=secrets[d.id],
                    endpoint_id=d.endpoint_id,
                    created_at=d.created_at,
                    attempts=d.attempts,
                )
                for d in due
            ]

    def _deliver(self, claimed: _Claimed) -> None:
        try:
            outcome = self._send(claimed)
            self._record(claimed, outcome)
        except Exception:
            # Left claimed: tried again when the claim runs out.
            log.exception("webhook delivery %s could not be recorded", claimed.id)

    def _send(self, claimed: _Claimed) -> _Outcome:
        started = time.monotonic()
        moment = utcnow()
        if claimed.secret is None:
            return _Outcome(moment, 0.0, None, "its endpoint is disabled or its secret is gone")
        body = self.render(claimed.event, moment, claimed.job_state)
        headers = signed_headers(claimed.secret, claimed.id, int(moment.timestamp()), body)
        try:
            answer = post(claimed.url, body, headers, self.policy)
        except FetchRefused as error:
            return _Outcome(moment, time.monotonic() - started, None, str(error))
        seconds = time.monotonic() - started
        if 200 <= answer.status_code < 300:
            return _Outcome(moment, seconds, answer.status_code, None)
        return _Outcome(moment, seconds, answer.status_code, f"HTTP {answer.status_code}")

    def _record(self, claimed: _Claimed, outcome: _Outcome) -> None:
        settings = self.settings
        moment = utcnow()
        attempts = claimed.attempts + 1
        gave_up = False
        with self.db.write() as session:
            delivery = repository.get_delivery(session, claimed.id)
            if delivery is None or delivery.status != repository.PENDING:
                return  # its endpoint was deleted meanwhile
            repository.add_attempt(
                session,
                WebhookAttempt(
                    delivery_id=claimed.id,
                    attempted_at=outcome.moment,
                    status_code=outcome.status_code,
                    error=outcome.error,
                    seconds=outcome.seconds,
                ),
            )
            delivery.attempts = attempts
            delivery.last_error = outcome.error
            if outcome.delivered:
                delivery.status = repository.DELIVERED
                delivery.finished_at = moment
            else:
                next_at = moment + timedelta(seconds=retry_delay(settings, attempts))
                window_end = claimed.created_at + timedelta(
                    seconds=settings.webhook_retry_for_seconds
                )
                if claimed.secret is None or next_at > window_end:
                    delivery.status = repository.FAILED
                    delivery.finished_at = moment
                    gave_up = True
                else:
                    delivery.next_attempt_at = next_at
            if claimed.endpoint_id is not None and claimed.secret is not None:
                self._note_health(session, claimed.endpoint_id, outcome, moment)
        if outcome.delivered:
            self.observer.webhook_sent(
                (moment - claimed.created_at).total_seconds(), outcome.seconds
            )
        elif gave_up:
            self.observer.webhook_failed()
        else:
            self.observer.webhook_retried(outcome.seconds)

    def _note_health(
        self, session: Session, endpoint_id: str, outcome: _Outcome, moment: datetime
    ) -> None:
        """An endpoint that answers well is healthy again; one that has failed without a break
        for `webhook_disable_after_seconds` is disabled, saying why."""
        endpoint = repository.endpoint_for_update(session, endpoint_id)
        if endpoint is None or endpoint.disabled_at is not None:
            return
        if outcome.delivered:
            endpoint.failing_since = None
            return
        if endpoint.failing_since is None:
            endpoint.failing_since = moment
            return
        failing = moment - endpoint.failing_since
        if failing.total_seconds() >= self.settings.webhook_disable_after_seconds:
            endpoint.disabled_at = moment
            endpoint.disabled_reason = (
                f"every delivery failed since {isoformat_ms(endpoint.failing_since)} "
                f"(the last: {outcome.error})"
            )
            log.warning("webhook endpoint %s disabled: %s", endpoint_id, endpoint.disabled_reason)
