"""SQL for idempotency records: one per (API key, Idempotency-Key), kept for 24 hours.

Plain statements, not ORM objects: every create with an Idempotency-Key looks its record up and
writes one, and the unit of work's bookkeeping cost more than the two statements
(docs/benchmarks.md, `create_overhead`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.orm import Session

from core.ids import new_id
from core.tables import IdempotencyRecord

# Built once: compiling a statement per create cost more than running it.
FIND = select(
    IdempotencyRecord.id,
    IdempotencyRecord.endpoint,
    IdempotencyRecord.body_hash,
    IdempotencyRecord.job_id,
    IdempotencyRecord.expires_at,
).where(
    IdempotencyRecord.api_key_id == bindparam("api_key_id"),
    IdempotencyRecord.key == bindparam("key"),
)
INSERT = insert(IdempotencyRecord)


def find(session: Session, api_key_id: str, key: str) -> Any:
    """The record's id, endpoint, body_hash, job_id and expires_at, or None."""
    return session.connection().execute(FIND, {"api_key_id": api_key_id, "key": key}).first()


def add(
    session: Session,
    *,
    api_key_id: str,
    key: str,
    endpoint: str,
    body_hash: str,
    job_id: str,
    created_at: datetime,
    expires_at: datetime,
) -> None:
    # On the session's connection: a Core statement, without the ORM's bulk-insert machinery.
    session.connection().execute(
        INSERT,
        {
            "id": new_id(),
            "api_key_id": api_key_id,
            "key": key,
            "endpoint": endpoint,
            "body_hash": body_hash,
            "job_id": job_id,
            "created_at": created_at,
            "expires_at": expires_at,
        },
    )


def remove(session: Session, record_id: str) -> None:
    session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.id == record_id))


def purge_expired(session: Session, moment: datetime) -> int:
    result = session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= moment)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
