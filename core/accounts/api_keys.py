"""An account's API keys: made (the plaintext shown once, only its hash kept), named, listed,
deactivated, activated again, revoked; every gateway sees a change from the next request on."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from core.accounts import repository
from core.accounts.service import AccountError, find_account
from core.clock import utcnow
from core.db import Database
from core.events import JobEvents
from core.pagination import decode_cursor, page_of
from core.tables import ApiKey

KEY_PREFIX = "sfm_"
KEY_STATES = ("active", "deactivated", "revoked")


@dataclass(frozen=True)
class NewKey:
    key: ApiKey
    plaintext: str


def hash_key(plaintext: str) -> str:
    # Keys are 256-bit random secrets, so a fast hash is as strong as a slow one here.
    return hashlib.sha256(plaintext.encode()).hexdigest()


# A key's name, however it is named (the dashboard, the CLI): the column's length, which
# PostgreSQL enforces (a longer name was a 500 there, and stored whole on SQLite).
MAX_KEY_NAME_LENGTH = 200


def _key_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise AccountError("a key needs a name")
    if len(name) > MAX_KEY_NAME_LENGTH:
        raise AccountError(f"a key's name has at most {MAX_KEY_NAME_LENGTH} characters")
    return name


def create_key(db: Database, email: str, name: str, expires_in_days: int | None) -> NewKey:
    name = _key_name(name)
    if expires_in_days is not None and expires_in_days <= 0:
        raise AccountError("--expires-in must be a positive number of days")
    account = find_account(db, email)
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    expires_at = utcnow() + timedelta(days=expires_in_days) if expires_in_days else None
    with db.write() as session:
        key = repository.add_key(
            session, account.id, name, plaintext[:10], hash_key(plaintext), expires_at
        )
    return NewKey(key=key, plaintext=plaintext)


def rename_key(db: Database, key_id: str, name: str, owner_id: str | None = None) -> ApiKey:
    name = _key_name(name)
    with db.write() as session:
        key = _owned_key(session, key_id, owner_id)
        key.name = name
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
