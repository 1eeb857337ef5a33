"""Accounts and API keys: creation, key states, and turning a presented key into a caller."""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.orm import Session

from core.accounts import repository
from core.accounts.callers import KnownKey
from core.clock import utcnow
from core.config import ServiceConfig
from core.credits import repository as credits_repository
from core.credits import service as credits
from core.db import Database
from core.errors import DomainError
from core.events import JobEvents
from core.pagination import decode_cursor, page_of
from core.sessions import repository as sessions_repository
from core.tables import Account, ApiKey, CreditEntry, Plan

KEY_PREFIX = "sfm_"
KEY_STATES = ("active", "deactivated", "revoked")
# last_used_at is a convenience, not an audit trail: write it at most once a minute per key.
TOUCH_INTERVAL = timedelta(seconds=60)
MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024
PASSWORDS = PasswordHasher()


@functools.cache
def _unknown_account_hash() -> str:
    """Verified against when the email is unknown, so an unknown email costs what a wrong
    password costs and the answer's timing does not tell them apart. Made on first use, not at
    import: a hash costs tens of milliseconds and 64 MiB, and every process imports this."""
    return PASSWORDS.hash(secrets.token_urlsafe(16))


class AccountError(DomainError):
    """A management command that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class Caller:
    """Who an authenticated request acts for."""

    account_id: str
    api_key_id: str
    email: str
    plan_id: str


@dataclass(frozen=True)
class NewKey:
    key: ApiKey
    plaintext: str


def hash_key(plaintext: str) -> str:
    # Keys are 256-bit random secrets, so a fast hash is as strong as a slow one here.
    return hashlib.sha256(plaintext.encode()).hexdigest()


def sync_plans(db: Database, config: ServiceConfig) -> None:
    """Write the configured plans to the database, where every process reads them."""
    with db.write() as session:
        for plan_id, plan in config.plans.items():
            repository.upsert_plan(session, plan_id, plan)


def create_account(db: Database, email: str, plan_id: str, credits_granted: int) -> Account:
    email = email.strip().lower()
    if credits_granted < 0:
        raise AccountError("credits must not be negative")
    with db.write() as session:
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


def grant_credits(db: Database, email: str, amount: int, reason: str) -> Account:
    if amount <= 0:
        raise AccountError("credits to grant must be a positive number")
    if not reason.strip():
        raise AccountError("a grant needs a reason")
    with db.write() as session:
        account = repository.account_by_email(session, email.strip().lower())
        if account is None:
            raise AccountError(f"no account for {email}")
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


def create_key(db: Database, email: str, name: str, expires_in_days: int | None) -> NewKey:
    if not name.strip():
        raise AccountError("a key needs a name")
    if expires_in_days is not None and expires_in_days <= 0:
        raise AccountError("--expires-in must be a positive number of days")
    account = find_account(db, email)
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    expires_at = utcnow() + timedelta(days=expires_in_days) if expires_in_days else None
    with db.write() as session:
        key = repository.add_key(
            session, account.id, name.strip(), plaintext[:10], hash_key(plaintext), expires_at
        )
    return NewKey(key=key, plaintext=plaintext)


def rename_key(db: Database, key_id: str, name: str, owner_id: str | None = None) -> ApiKey:
    if not name.strip():
        raise AccountError("a key needs a name")
    with db.write() as session:
        key = _owned_key(session, key_id, owner_id)
        key.name = name.strip()
        return key


def _owned_key(session: Session, key_id: str, owner_id: str | None) -> ApiKey:
    """The key, which must belong to `owner_id` when one is given (the dashboard's caller);
    the CLI, run by the operator, names any key."""
    key = repository.get_key(session, key_id)
    if key is None or key.purpose != "api" or (owner_id is not None and key.account_id != owner_id):
        raise AccountError(f"no key {key_id}")
    return key


def list_keys(db: Database, email: str) -> list[ApiKey]:
    account = find_account(db, email)
    with db.read() as session:
        return list(repository.keys_of(session, account.id))


def keys_page(
    db: Database, account_id: str, cursor: str | None, limit: int
) -> tuple[list[ApiKey], str | None]:
    """One page of the account's keys, newest first, and the next cursor. Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        return page_of(list(repository.keys_page(session, account_id, after, limit + 1)), limit)


def set_key_state(
    db: Database, events: JobEvents, key_id: str, state: str, owner_id: str | None = None
) -> ApiKey:
    """The key in its new state, refused or accepted again by every gateway from the next
    request on: the credential event after the commit clears their cached callers. With
    `owner_id`, only that account's key (the dashboard's way)."""
    if state not in KEY_STATES:
        raise AccountError(f"unknown key state {state!r}")
    with db.write() as session:
        key = _owned_key(session, key_id, owner_id)
        if key.state == "revoked" and state != "revoked":
            raise AccountError("a revoked key stays revoked")
        key.state = state
    events.publish_credentials_changed()
    return key


@dataclass(frozen=True)
class Identified:
    caller: Caller
    # The key's last-use time is stale: `record_use` should be called (it writes).
    use_unrecorded: bool


def key_hash_of(plaintext: str | None) -> str | None:
    """The hash a key is looked up by, or None for something that cannot be a key."""
    if not plaintext or not plaintext.startswith(KEY_PREFIX) or len(plaintext) > 200:
        return None
    return hash_key(plaintext)


def known_key(db: Database, key_hash: str) -> KnownKey | None:
    """The key with this hash and its account, from one read (no write: this runs on every
    request that misses the gateway's `CallerCache`)."""
    with db.statements() as connection:
        found = repository.caller_by_key_hash(connection, key_hash)
    if found is None:
        return None
    return KnownKey(
        key_id=found.key_id,
        state=found.state,
        expires_at=found.expires_at,
        last_used_at=found.last_used_at,
        account_id=found.account_id,
        email=found.email,
        plan_id=found.plan_id,
    )


def judge(known: KnownKey | None, now: datetime) -> Identified | None:
    """Who a found key lets in at `now`, or None for an unknown or unusable key."""
    if known is None or known.state != "active":
        return None
    if known.expires_at is not None and known.expires_at <= now:
        return None
    caller = Caller(
        account_id=known.account_id,
        api_key_id=known.key_id,
        email=known.email,
        plan_id=known.plan_id,
    )
    stale = known.last_used_at is None or now - known.last_used_at > TOUCH_INTERVAL
    return Identified(caller, stale)


def identify(db: Database, plaintext: str | None, now: datetime) -> Identified | None:
    """Who a key belongs to, from one read, or None for a missing, unknown or unusable key."""
    key_hash = key_hash_of(plaintext)
    return judge(known_key(db, key_hash), now) if key_hash is not None else None


def record_use(db: Database, key_id: str, now: datetime) -> None:
    with db.write() as session:
        repository.touch_key(session, key_id, now)


def authenticate(db: Database, plaintext: str | None, now: datetime | None = None) -> Caller | None:
    """`identify`, recording the key's use when it is due."""
    now = now or utcnow()
    identified = identify(db, plaintext, now)
    if identified is None:
        return None
    if identified.use_unrecorded:
        record_use(db, identified.caller.api_key_id, now)
    return identified.caller


def set_password(db: Database, email: str, password: str) -> Account:
    """Set the account's dashboard password (argon2); every session of the account ends."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise AccountError(f"a password has at most {MAX_PASSWORD_LENGTH} characters")
    password_hash = PASSWORDS.hash(password)
    with db.write() as session:
        account = repository.account_by_email(session, email.strip().lower())
        if account is None:
            raise AccountError(f"no account for {email}")
        account.password_hash = password_hash
        sessions_repository.remove_all_of(session, account.id)
        return account


def change_password(db: Database, account_id: str, current: str, new: str) -> Account:
    """The signed-in person's own change: the current password first."""
    with db.read() as session:
        account = repository.get_account(session, account_id)
    if account is None or not _password_matches(account.password_hash, current):
        raise AccountError("the current password is not right")
    return set_password(db, account.email, new)


def set_admin(db: Database, email: str, admin: bool = True) -> Account:
    with db.write() as session:
        account = repository.account_by_email(session, email.strip().lower())
        if account is None:
            raise AccountError(f"no account for {email}")
        account.is_admin = admin
        return account


def check_password(db: Database, email: str, password: str) -> Account | None:
    """The account whose email and password these are, or None, taking as long either way."""
    if len(password) > MAX_PASSWORD_LENGTH:
        return None
    with db.read() as session:
        account = repository.account_by_email(session, email.strip().lower())
    stored = account.password_hash if account is not None else None
    if not _password_matches(stored, password) or account is None:
        return None
    if PASSWORDS.check_needs_rehash(stored or ""):
        with db.write() as session:
            fresh = repository.get_account(session, account.id)
            if fresh is not None:
                fresh.password_hash = PASSWORDS.hash(password)
    return account


def _password_matches(stored: str | None, password: str) -> bool:
    try:
        return PASSWORDS.verify(stored or _unknown_account_hash(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


def dashboard_caller(db: Database, account_id: str) -> Caller:
    """The caller that the account's jobs created in the dashboard act as: its dashboard key
    (made on first use), so idempotency and rate limits work as for any key."""
    with db.read() as session:
        account = repository.get_account(session, account_id)
        key = repository.dashboard_key(session, account_id)
    if account is None:
        raise AccountError("no such account")
    if key is None:
        with db.write() as session:
            repository.lock_account(session, account_id)
            key = repository.dashboard_key(session, account_id) or repository.add_dashboard_key(
                session, account_id, hash_key(secrets.token_urlsafe(32))
            )
    return Caller(
        account_id=account.id, api_key_id=key.id, email=account.email, plan_id=account.plan_id
    )
