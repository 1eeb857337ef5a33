"""SQL for webhooks: endpoints, the deliveries' outbox (claimed with SKIP LOCKED) and attempts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from core.tables import Account, JobRow, WebhookAttempt, WebhookDelivery, WebhookEndpoint

PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"


def add_endpoint(session: Session, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    session.add(endpoint)
    session.flush()
    return endpoint


def endpoints_of(session: Session, account_id: str) -> Sequence[WebhookEndpoint]:
    return session.scalars(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.account_id == account_id)
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    ).all()


def count_endpoints(session: Session, account_id: str) -> int:
    counted: int = (
        session.scalar(
            select(func.count())
            .select_from(WebhookEndpoint)
            .where(WebhookEndpoint.account_id == account_id)
        )
        or 0
    )
    return counted


def endpoint_owned(
    session: Session, account_id: str, endpoint_id: str, *, for_update: bool = False
) -> WebhookEndpoint | None:
    query = select(WebhookEndpoint).where(
        WebhookEndpoint.id == endpoint_id, WebhookEndpoint.account_id == account_id
    )
    if for_update:
        query = query.with_for_update()
    return session.scalars(query).first()


def delete_endpoint(session: Session, endpoint: WebhookEndpoint, moment: datetime) -> None:
    """Its waiting deliveries fail (their secret goes with it); sent ones stay in the job's
    history, no longer naming it."""
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.status == PENDING)
        .values(status=FAILED, finished_at=moment, last_error="the endpoint was deleted")
    )
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint.id)
        .values(endpoint_id=None)
    )
    session.delete(endpoint)


def set_account_secret(session: Session, account_id: str, secret: str) -> None:
    session.execute(update(Account).where(Account.id == account_id).values(webhook_secret=secret))


def account_secret(session: Session, account_id: str) -> str | None:
    return session.scalar(select(Account.webhook_secret).where(Account.id == account_id))


# The outbox's statements run inside each job transition: built once, run on the
# transaction's connection (the ORM's per-statement machinery would be most of their cost).
# The job's columns with each enabled endpoint of its account (none: one row, endpoint NULL).
JOB_STATE_AND_ENDPOINTS = (
    select(
        JobRow.id,
        JobRow.account_id,
        JobRow.type,
        JobRow.status,
        JobRow.created_at,
        JobRow.result,
        JobRow.error,
        JobRow.progress,
        JobRow.message,
        JobRow.webhook,
        WebhookEndpoint.id.label("endpoint_id"),
        WebhookEndpoint.url.label("endpoint_url"),
        WebhookEndpoint.events.label("endpoint_events"),
    )
    .outerjoin(
        WebhookEndpoint,
        and_(
            WebhookEndpoint.account_id == JobRow.account_id, WebhookEndpoint.disabled_at.is_(None)
        ),
    )
    .where(JobRow.id == bindparam("job_id"))
)
INSERT_DELIVERY = insert(WebhookDelivery)


def outbox_from(jobs: str, condition: str = "TRUE") -> str:
    """PostgreSQL: the outbox's INSERT as a data-modifying CTE's body, for the jobs a CTE named
    `jobs` of the same statement just changed (every column of `jobs`), so that a transition
    stays one statement committing by itself (`core/jobs/repository.py`). What `outbox.record`
    writes, in SQL: one delivery of `:event` for the job's own webhook and each enabled
    endpoint of its account whose filter names it, with the job's columns as changed."""
    return f"""
        INSERT INTO webhook_deliveries (id, account_id, job_id, source, endpoint_id, url, event,
            job_state, status, attempts, next_attempt_at, created_at)
        SELECT CAST(gen_random_uuid() AS VARCHAR), j.account_id, j.id, target.source,
            target.endpoint_id, target.url, CAST(:event AS VARCHAR),
            jsonb_build_object('id', j.id, 'type', j.type, 'status', j.status,
                'createdAt', to_char(j.created_at AT TIME ZONE 'UTC',
                    'YYYY-MM-DD"T"HH24\\:MI\\:SS.MS"Z"'),
                'result', j.result, 'error', j.error, 'progress', j.progress,
                'message', j.message),
            '{PENDING}', 0, :moment, :moment
        FROM {jobs} AS j CROSS JOIN LATERAL (
            SELECT 'job' AS source, CAST(NULL AS VARCHAR) AS endpoint_id,
                j.webhook ->> 'url' AS url
            WHERE j.webhook -> 'events' ? CAST(:event AS TEXT)
            UNION ALL
            SELECT 'endpoint', e.id, e.url FROM webhook_endpoints AS e
            WHERE e.account_id = j.account_id AND e.disabled_at IS NULL
                AND e.events ? CAST(:event AS TEXT)
        ) AS target
        WHERE {condition}
    """


def job_state_and_endpoints(connection: Connection, job_id: str) -> Sequence[Row[Any]]:
    """The job as this transaction sees it (after its change), once per enabled endpoint of
    its account: one round trip."""
    return connection.execute(JOB_STATE_AND_ENDPOINTS, {"job_id": job_id}).all()


def add_deliveries(connection: Connection, deliveries: Sequence[dict[str, Any]]) -> None:
    connection.execute(INSERT_DELIVERY, list(deliveries))


def claim_due(
    session: Session, moment: datetime, claimed_until: datetime, limit: int
) -> Sequence[WebhookDelivery]:
    """The oldest due deliveries, made this deliverer's until `claimed_until` (when another may
    take one whose sending died with its process). On PostgreSQL, rows another deliverer is
    claiming right now are skipped (`FOR UPDATE SKIP LOCKED`), so deliverers never wait on or
    take each other's; SQLite's write transaction is the whole database's, one claim at a time."""
    due = session.scalars(
        select(WebhookDelivery)
        .where(WebhookDelivery.status == PENDING, WebhookDelivery.next_attempt_at <= moment)
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    for delivery in due:
        delivery.next_attempt_at = claimed_until
    return due


def secrets_for(session: Session, deliveries: Sequence[WebhookDelivery]) -> dict[str, str | None]:
    """The secret each delivery is signed with now, by delivery id (None: none any more)."""
    endpoint_ids = {d.endpoint_id for d in deliveries if d.endpoint_id is not None}
    account_ids = {d.account_id for d in deliveries if d.source == "job"}
    endpoint_secrets: dict[str, str] = {
        endpoint_id: secret
        for endpoint_id, secret in session.execute(
            select(WebhookEndpoint.id, WebhookEndpoint.secret).where(
                WebhookEndpoint.id.in_(endpoint_ids), WebhookEndpoint.disabled_at.is_(None)
            )
        )
    }
    account_secrets: dict[str, str | None] = {
        account_id: secret
        for account_id, secret in session.execute(
            select(Account.id, Account.webhook_secret).where(Account.id.in_(account_ids))
        )
    }
    return {
        d.id: (
            account_secrets.get(d.account_id)
            if d.source == "job"
            else endpoint_secrets.get(d.endpoint_id or "")
        )
        for d in deliveries
    }


def get_delivery(session: Session, delivery_id: str) -> WebhookDelivery | None:
    return session.scalars(
        select(WebhookDelivery).where(WebhookDelivery.id == delivery_id).with_for_update()
    ).first()


def add_attempt(session: Session, attempt: WebhookAttempt) -> None:
    session.add(attempt)


def deliveries_of_job(session: Session, job_id: str) -> Sequence[WebhookDelivery]:
    return session.scalars(
        select(WebhookDelivery)
        .where(WebhookDelivery.job_id == job_id)
        .order_by(WebhookDelivery.created_at, WebhookDelivery.id)
    ).all()


def attempts_of(session: Session, delivery_ids: Sequence[str]) -> Sequence[WebhookAttempt]:
    return session.scalars(
        select(WebhookAttempt)
        .where(WebhookAttempt.delivery_id.in_(delivery_ids))
        .order_by(WebhookAttempt.attempted_at, WebhookAttempt.id)
    ).all()


def endpoint_for_update(session: Session, endpoint_id: str) -> WebhookEndpoint | None:
    return session.scalars(
        select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id).with_for_update()
    ).first()
