"""Invitations: an admin adds a person by email and hands them a one-time sign-in link; opening
it, they choose their password and are signed in. The link carries a random secret; only its
hash is stored (as for sessions), it lasts a week, and using it ends every invitation of the
account."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.accounts import repository
from core.accounts.passwords import hash_new_password
from core.accounts.service import AccountError, add_account
from core.clock import utcnow
from core.db import Database
from core.sessions import repository as sessions_repository
from core.tables import Account, Invitation

LIFETIME = timedelta(days=7)


class InvitationNotValid(AccountError):
    def __init__(self) -> None:
        super().__init__("this invitation link is not valid: it was used already, or it expired")


@dataclass(frozen=True)
class Invited:
    account: Account
    # The link's secret, shown to the admin once.
    token: str
    expires_at: datetime


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invite(db: Database, email: str, plan_id: str, credits_granted: int) -> Invited:
    """A new account (the rules of every create) with no password yet, and its invitation."""
    token = secrets.token_urlsafe(32)
    moment = utcnow()
    with db.write() as session:
        account = add_account(session, email, plan_id, credits_granted)
        invitation = repository.add_invitation(
            session,
            Invitation(
                account_id=account.id,
                token_hash=_hash(token),
                created_at=moment,
                expires_at=moment + LIFETIME,
            ),
        )
    return Invited(account, token, invitation.expires_at)


def invited_account(db: Database, token: str) -> Account | None:
    """Whose live invitation the token is (None: unknown, used or expired)."""
    if not token or len(token) > 200:
        return None
    with db.read() as session:
        found = repository.live_invitation(session, _hash(token), utcnow())
    return None if found is None else found[1]


def accept(db: Database, token: str, password: str) -> Account:
    """Set the invited account's password and use the invitation up (every invitation of the
    account ends, and so does any session). Raises AccountError."""
    password_hash = hash_new_password(password)
    if not token or len(token) > 200:
        raise InvitationNotValid()
    with db.write() as session:
        found = repository.live_invitation(session, _hash(token), utcnow(), for_update=True)
        if found is None:
            raise InvitationNotValid()
        account = found[1]
        account.password_hash = password_hash
        repository.remove_invitations_of(session, account.id)
        sessions_repository.remove_all_of(session, account.id)
        return account
