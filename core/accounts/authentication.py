"""Turning a presented API key into a caller: the key found by its hash (one read, or the
gateway's `CallerCache`), judged (active, not expired), its last use recorded at most once a
minute; and the caller the dashboard's own creates act as."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.accounts import repository
from core.accounts.api_keys import KEY_PREFIX, hash_key
from core.accounts.callers import KnownKey
from core.accounts.service import AccountError, Caller
from core.clock import utcnow
from core.db import Database

# last_used_at is a convenience, not an audit trail: write it at most once a minute per key.
TOUCH_INTERVAL = timedelta(seconds=60)


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
