"""The dashboard's sign-in sessions: server-side rows, a rolling expiry within an absolute
lifetime (SFUMATO_SESSION_ABSOLUTE_HOURS from the sign-in), a CSRF token each.

The browser holds a random secret in a cookie; only its hash is stored, so a read of the
database gives no one a session. Signing out ends the row; a password change ends every row of
the account (`core/accounts/service.set_password`).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.clock import utcnow
from core.db import Database
from core.sessions import repository
from core.tables import Account, DashboardSession

LIFETIME = timedelta(days=7)
# The rolling expiry is written at most this often per session, not on every page.
EXTEND_INTERVAL = timedelta(minutes=5)


@dataclass(frozen=True)
class Started:
    token: str
    csrf_token: str
    expires_at: datetime


@dataclass(frozen=True)
class SignedIn:
    """Who a session cookie belongs to."""

    session_id: str
    account_id: str
    email: str
    plan_id: str
    is_admin: bool
    csrf_token: str
    # The expiry was pushed forward by this request: the cookie's should follow.
    extended: bool = False


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start(db: Database, account_id: str, absolute: timedelta) -> Started:
    token = secrets.token_urlsafe(32)
    moment = utcnow()
    row = DashboardSession(
        account_id=account_id,
        token_hash=_hash(token),
        csrf_token=secrets.token_urlsafe(32),
        created_at=moment,
        last_seen_at=moment,
        expires_at=moment + min(LIFETIME, absolute),
    )
    with db.write() as session:
        repository.add(session, row)
    return Started(token, row.csrf_token, row.expires_at)


def resume(
    db: Database, token: str | None, absolute: timedelta, now: datetime | None = None
) -> SignedIn | None:
    """The session behind a cookie's token (None: missing, unknown, expired, or signed in more
    than `absolute` ago), its expiry pushed a week ahead when it is due, never past
    `absolute` after the sign-in."""
    if not token or len(token) > 200:
        return None
    now = now or utcnow()
    token_hash = _hash(token)
    with db.read() as session:
        found = repository.live_with_account(session, token_hash, now)
    if found is None:
        return None
    row, account = found
    ends = row.created_at + absolute
    if ends <= now:
        return None
    extended = now - row.last_seen_at > EXTEND_INTERVAL
    if extended:
        with db.write() as session:
            repository.extend(session, row.id, now, min(now + LIFETIME, ends))
    return _signed_in(row, account, extended)


def _signed_in(row: DashboardSession, account: Account, extended: bool) -> SignedIn:
    return SignedIn(
        session_id=row.id,
        account_id=account.id,
        email=account.email,
        plan_id=account.plan_id,
        is_admin=account.is_admin,
        csrf_token=row.csrf_token,
        extended=extended,
    )


def end(db: Database, token: str) -> None:
    with db.write() as session:
        repository.remove(session, _hash(token))


def purge_expired(db: Database) -> int:
    with db.write() as session:
        return repository.purge_expired(session, utcnow())


def csrf_matches(signed_in: SignedIn, presented: str | None) -> bool:
    return bool(presented) and secrets.compare_digest(signed_in.csrf_token, presented or "")
