"""SQL for idempotency records: one per (API key, Idempotency-Key), kept for 24 hours."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from core.tables import IdempotencyRecord

# Built once: every create with an Idempotency-Key looks its record up.
FIND = select(IdempotencyRecord).where(
    IdempotencyRecord.api_key_id == bindparam("api_key_id"),
    IdempotencyRecord.key == bindparam("key"),
)


def find(session: Session, api_key_id: str, key: str) -> IdempotencyRecord | None:
    return session.scalars(FIND, {"api_key_id": api_key_id, "key": key}).first()


def add(session: Session, record: IdempotencyRecord) -> None:
    session.add(record)
    session.flush()


def remove(session: Session, record: IdempotencyRecord) -> None:
    session.delete(record)
    session.flush()


def purge_expired(session: Session, moment: datetime) -> int:
    result = session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= moment)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
