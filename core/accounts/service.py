"""Accounts and their plans: creating accounts, moving them between plans, granting credits,
the statement of their ledger, the admin flag; and `Caller`, who a request acts for. API keys
are `api_keys.py`, turning a presented key into a caller `authentication.py`, dashboard
passwords `passwords.py`; all raise `AccountError` for what cannot be done."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from core.accounts import repository
from core.credits import repository as credits_repository
from core.credits import service as credits
from core.db import Database
from core.errors import DomainError
from core.events import JobEvents
from core.pagination import decode_cursor, page_of
from core.service_config import ServiceConfig
from core.tables import Account, CreditEntry, Plan


class AccountError(DomainError):
    """A management command that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class Caller:
    """Who an authenticated request acts for."""

    account_id: str
    api_key_id: str
    email: str
    plan_id: str


def sync_plans(db: Database, config: ServiceConfig) -> None:
    """Write the configured plans to the database, where every process reads them."""
    with db.write() as session:
        for plan_id, plan in config.plans.items():
            repository.upsert_plan(session, plan_id, plan)


def create_account(db: Database, email: str, plan_id: str, credits_granted: int) -> Account:
    with db.write() as session:
        return add_account(session, email, plan_id, credits_granted)


def add_account(session: Session, email: str, plan_id: str, credits_granted: int) -> Account:
    """A new account in the caller's transaction (the rules of every way to create one: the
    command line, the admin page, an invitation)."""
    email = email.strip().lower()
    if "@" not in email.strip("@") or any(character.isspace() for character in email):
        raise AccountError(f"{email or 'an empty email'} is not an email address")
    if credits_granted < 0:
        raise AccountError("credits must not be negative")
    _check_plan(session, plan_id)
    if repository.account_by_email(session, email) is not None:
        raise AccountError(f"an account for {email} exists already")
    account = repository.add_account(session, email, plan_id)
    if credits_granted:
        credits.grant(session, account.id, credits_granted, "initial grant")
    return account


def _check_plan(session: Session, plan_id: str) -> None:
    known = repository.plan_ids(session)
    if plan_id not in known:
        raise AccountError(f"unknown plan {plan_id!r} (one of {', '.join(known)})")


def plan_of(db: Database, plan_id: str) -> Plan | None:
    with db.read() as session:
        return repository.get_plan(session, plan_id)


def set_plan(db: Database, events: JobEvents, email: str, plan_id: str) -> Account:
    with db.write() as session:
        _check_plan(session, plan_id)
        account = repository.account_by_email(session, email.strip().lower())
        if account is None:
            raise AccountError(f"no account for {email}")
        account.plan_id = plan_id
    # Gateways cache callers, plan included (core/accounts/callers.py).
    events.publish_credentials_changed()
    return account


# What one grant may add, and what a balance may hold: the ledger's columns are 32-bit
# integers, so a larger number would be a database error (a 500), not a refusal.
MAX_GRANT = 1_000_000_000
MAX_BALANCE = 2**31 - 1


def grant_credits(db: Database, email: str, amount: int, reason: str) -> Account:
    if not 0 < amount <= MAX_GRANT:
        raise AccountError(f"credits to grant must be a whole number from 1 to {MAX_GRANT:,}")
    if not reason.strip():
        raise AccountError("a grant needs a reason")
    with db.write() as session:
        account = repository.account_by_email(session, email.strip().lower())
        if account is None:
            raise AccountError(f"no account for {email}")
        if account.credit_balance + amount > MAX_BALANCE:
            raise AccountError(f"a balance holds at most {MAX_BALANCE:,} credits")
        credits.grant(session, account.id, amount, reason.strip())
        session.refresh(account)
        return account


@dataclass(frozen=True)
class Statement:
    """An account's balance beside its ledger, and whether the two agree."""

    account: Account
    entries: list[CreditEntry]

    @property
    def ledger_total(self) -> int:
        return sum(entry.amount for entry in self.entries)

    @property
    def consistent(self) -> bool:
        return self.ledger_total == self.account.credit_balance


def statement(db: Database, email: str) -> Statement:
    account = find_account(db, email)
    with db.read() as session:
        return Statement(account, list(credits_repository.entries_of(session, account.id)))


def find_account(db: Database, email: str) -> Account:
    with db.read() as session:
        account = repository.account_by_email(session, email.strip().lower())
    if account is None:
        raise AccountError(f"no account for {email}")
    return account


def list_accounts(db: Database) -> list[Account]:
    with db.read() as session:
        return list(repository.list_accounts(session))


def accounts_page(db: Database, cursor: str | None, limit: int) -> tuple[list[Account], str | None]:
    """One page of every account, newest first, and the next cursor. Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        return page_of(list(repository.accounts_page(session, after, limit + 1)), limit)


@dataclass(frozen=True)
class Overview:
    """What `GET /account` shows: the caller's plan (with its limits) and credit balance."""

    plan: Plan
    credits: int


def overview(db: Database, caller: Caller) -> Overview | None:
    """The caller's plan and balance from one read; None if the plan is gone."""
    with db.read() as session:
        plan = repository.get_plan(session, caller.plan_id)
        if plan is None:
            return None
        return Overview(plan, credits_repository.balance(session, caller.account_id))


def set_admin(db: Database, email: str, admin: bool = True) -> Account:
    with db.write() as session:
        account = repository.account_by_email(session, email.strip().lower())
        if account is None:
            raise AccountError(f"no account for {email}")
        account.is_admin = admin
        return account
