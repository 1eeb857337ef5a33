"""SQL for the dashboard's sign-in sessions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from core.tables import Account, DashboardSession


def add(session: Session, row: DashboardSession) -> DashboardSession:
    session.add(row)
    session.flush()
    return row


def live_with_account(
    session: Session, token_hash: str, moment: datetime
) -> tuple[DashboardSession, Account] | None:
    found = session.execute(
        select(DashboardSession, Account)
        .join(Account, Account.id == DashboardSession.account_id)
        .where(DashboardSession.token_hash == token_hash, DashboardSession.expires_at > moment)
    ).first()
    return None if found is None else (found[0], found[1])


def extend(session: Session, session_id: str, moment: datetime, expires_at: datetime) -> None:
    session.execute(
        update(DashboardSession)
        .where(DashboardSession.id == session_id)
        .values(last_seen_at=moment, expires_at=expires_at)
    )


def remove(session: Session, token_hash: str) -> None:
    session.execute(delete(DashboardSession).where(DashboardSession.token_hash == token_hash))


def remove_all_of(session: Session, account_id: str) -> None:
    session.execute(delete(DashboardSession).where(DashboardSession.account_id == account_id))


def purge_expired(session: Session, moment: datetime) -> int:
    result = session.execute(delete(DashboardSession).where(DashboardSession.expires_at <= moment))
    return int(result.rowcount)  # type: ignore[attr-defined]
