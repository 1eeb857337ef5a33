"""SQL for the credit ledger and the balance kept beside it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from core.pagination import newest_first
from core.tables import Account, CreditEntry, JobRow


def take(session: Session, account_id: str, amount: int) -> int | None:
    """Subtract `amount` if the balance covers it, atomically; the new balance, or None."""
    return session.execute(
        update(Account)
        .where(Account.id == account_id, Account.credit_balance >= amount)
        .values(credit_balance=Account.credit_balance - amount)
        .returning(Account.credit_balance)
    ).scalar_one_or_none()


def give(session: Session, account_id: str, amount: int) -> int:
    return session.execute(
        update(Account)
        .where(Account.id == account_id)
        .values(credit_balance=Account.credit_balance + amount)
        .returning(Account.credit_balance)
    ).scalar_one()


def balance(session: Session, account_id: str) -> int:
    return session.execute(
        select(Account.credit_balance).where(Account.id == account_id)
    ).scalar_one()


def add_entry(
    session: Session,
    account_id: str,
    kind: str,
    amount: int,
    balance_after: int,
    job_id: str | None = None,
    reason: str | None = None,
) -> None:
    session.add(
        CreditEntry(
            account_id=account_id,
            job_id=job_id,
            kind=kind,
            amount=amount,
            balance_after=balance_after,
            reason=reason,
        )
    )


def entries_of(session: Session, account_id: str) -> Sequence[CreditEntry]:
    return session.scalars(
        select(CreditEntry)
        .where(CreditEntry.account_id == account_id)
        .order_by(CreditEntry.created_at, CreditEntry.id)
    ).all()


def line_heads_page(
    session: Session, account_id: str, after: tuple[datetime, str] | None, limit: int
) -> Sequence[CreditEntry]:
    """The movements that begin a line of the ledger, newest first, keyset on (created_at, id):
    a job's reservation (its first movement) and every movement of no job (a grant)."""
    query = select(CreditEntry).where(
        CreditEntry.account_id == account_id,
        or_(CreditEntry.job_id.is_(None), CreditEntry.kind == "reserve"),
    )
    return newest_first(session, query, CreditEntry, after, limit)


def movements_of_jobs(session: Session, job_ids: Sequence[str]) -> Sequence[CreditEntry]:
    """Every movement of these jobs, oldest first."""
    if not job_ids:
        return []
    return session.scalars(
        select(CreditEntry)
        .where(CreditEntry.job_id.in_(job_ids))
        .order_by(CreditEntry.created_at, CreditEntry.id)
    ).all()


def jobs_by_ids(session: Session, job_ids: Sequence[str]) -> Sequence[JobRow]:
    """The jobs the ledger names (deleted ones too: their rows stay for it)."""
    if not job_ids:
        return []
    return session.scalars(select(JobRow).where(JobRow.id.in_(job_ids))).all()


def spending_since(
    session: Session, account_id: str, since: datetime
) -> list[tuple[datetime, int]]:
    """(time, credits spent) of each reservation and refund since `since`: a reservation spends,
    a refund gives back."""
    rows = session.execute(
        select(CreditEntry.created_at, CreditEntry.amount).where(
            CreditEntry.account_id == account_id,
            CreditEntry.kind.in_(("reserve", "refund")),
            CreditEntry.created_at >= since,
        )
    )
    return [(moment, -amount) for moment, amount in rows]
