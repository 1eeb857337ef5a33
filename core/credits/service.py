"""Credits: reserve at create, settle on completion, refund on failure or cancel.

Every movement is a ledger row written in the same transaction as the balance change and the
job transition that causes it, so a job is charged once however often its task is delivered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy.orm import Session

from core.clock import utcnow
from core.credits import repository
from core.db import Database
from core.errors import DomainError
from core.pagination import decode_cursor, page_of
from core.tables import CreditEntry, JobRow


class InsufficientCredits(DomainError):
    status = 402
    code = "INSUFFICIENT_CREDITS"

    def __init__(self, required: int, available: int) -> None:
        super().__init__(
            "Insufficient credits", {"creditsRequired": required, "creditsAvailable": available}
        )
        self.required = required
        self.available = available


def reserve(session: Session, account_id: str, job_id: str, amount: int) -> None:
    after = repository.take(session, account_id, amount)
    if after is None:
        raise InsufficientCredits(amount, repository.balance(session, account_id))
    repository.add_entry(session, account_id, "reserve", -amount, after, job_id=job_id)


def settle(session: Session, account_id: str, job_id: str, amount: int) -> None:
    """The reservation becomes a charge; the balance already reflects it."""
    after = repository.balance(session, account_id)
    repository.add_entry(
        session, account_id, "settle", 0, after, job_id=job_id, reason=settle_reason(amount)
    )


def settle_reason(amount: int) -> str:
    """What a settle entry says (also written by `core.jobs.repository.COMPLETE`)."""
    return f"charged {amount}"


def refund(session: Session, account_id: str, job_id: str, amount: int, reason: str) -> None:
    if amount <= 0:
        return
    after = repository.give(session, account_id, amount)
    repository.add_entry(session, account_id, "refund", amount, after, job_id=job_id, reason=reason)


def grant(session: Session, account_id: str, amount: int, reason: str) -> None:
    after = repository.give(session, account_id, amount)
    repository.add_entry(session, account_id, "grant", amount, after, reason=reason)


@dataclass(frozen=True)
class LedgerLine:
    """One line of the ledger as a person reads it: a job with all its movements (reserve, then
    settle or refund), or one movement of no job (a grant)."""

    movements: list[CreditEntry]
    job: JobRow | None

    @property
    def created_at(self) -> datetime:
        return self.movements[0].created_at

    @property
    def amount(self) -> int:
        """What the line did to the balance, all its movements together."""
        return sum(movement.amount for movement in self.movements)

    @property
    def last(self) -> CreditEntry:
        return self.movements[-1]


def ledger_page(
    db: Database, account_id: str, cursor: str | None, limit: int
) -> tuple[list[LedgerLine], str | None]:
    """One page of the ledger's lines, newest first (by each line's first movement), and the
    next cursor. Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        heads, next_cursor = page_of(
            list(repository.line_heads_page(session, account_id, after, limit + 1)), limit
        )
        job_ids = [head.job_id for head in heads if head.job_id is not None]
        movements: dict[str, list[CreditEntry]] = {}
        for movement in repository.movements_of_jobs(session, job_ids):
            movements.setdefault(movement.job_id or "", []).append(movement)
        jobs = {job.id: job for job in repository.jobs_by_ids(session, job_ids)}
    lines = [
        LedgerLine(movements[head.job_id], jobs.get(head.job_id))
        if head.job_id is not None
        else LedgerLine([head], None)
        for head in heads
    ]
    return lines, next_cursor


def daily_spending(db: Database, account_id: str, days: int = 30) -> list[tuple[date, int]]:
    """Credits spent on each of the last `days` days (UTC), oldest first, today included."""
    today = utcnow().date()
    first = today - timedelta(days=days - 1)
    totals = {first + timedelta(days=offset): 0 for offset in range(days)}
    with db.read() as session:
        movements = repository.spending_since(
            session,
            account_id,
            utcnow().replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days - 1),
        )
    for moment, spent in movements:
        day = moment.date()
        if day in totals:
            totals[day] += spent
    return sorted(totals.items())
