"""Credits: reserve at create, settle on completion, refund on failure or cancel.

Every movement is a ledger row written in the same transaction as the balance change and the
job transition that causes it, so a job is charged once however often its task is delivered.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.credits import repository
from core.errors import DomainError


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
        session, account_id, "settle", 0, after, job_id=job_id, reason=f"charged {amount}"
    )


def refund(session: Session, account_id: str, job_id: str, amount: int, reason: str) -> None:
    if amount <= 0:
        return
    after = repository.give(session, account_id, amount)
    repository.add_entry(session, account_id, "refund", amount, after, job_id=job_id, reason=reason)


def grant(session: Session, account_id: str, amount: int, reason: str) -> None:
    after = repository.give(session, account_id, amount)
    repository.add_entry(session, account_id, "grant", amount, after, reason=reason)
