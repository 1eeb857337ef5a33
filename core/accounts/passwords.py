"""Dashboard passwords: set (argon2; every session of the account ends), given with a new
account, changed by their owner, checked at sign-in in the same time whether or not the email
is known."""

from __future__ import annotations

import functools
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from core.accounts import repository
from core.accounts.service import AccountError, add_account
from core.db import Database
from core.sessions import repository as sessions_repository
from core.tables import Account

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024
PASSWORDS = PasswordHasher()


class WrongPassword(AccountError):
    """The current password given for a change is not the account's."""


@functools.cache
def _unknown_account_hash() -> str:
    """Verified against when the email is unknown, so an unknown email costs what a wrong
    password costs and the answer's timing does not tell them apart. Made on first use, not at
    import: a hash costs tens of milliseconds and 64 MiB, and every process imports this."""
    return PASSWORDS.hash(secrets.token_urlsafe(16))


def hash_new_password(password: str) -> str:
    """The argon2 hash of a password being set, within the length rules."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise AccountError(f"a password has at most {MAX_PASSWORD_LENGTH} characters")
    return PASSWORDS.hash(password)


def create_with_password(
    db: Database, email: str, plan_id: str, credits_granted: int, password: str
) -> Account:
    """A new account that can sign in to the dashboard at once (the admin page's create)."""
    password_hash = hash_new_password(password)
    with db.write() as session:
        account = add_account(session, email, plan_id, credits_granted)
        account.password_hash = password_hash
        return account


def set_password(db: Database, email: str, password: str) -> Account:
    """Set the account's dashboard password (argon2); every session of the account ends."""
    password_hash = hash_new_password(password)
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
        raise WrongPassword("the current password is not right")
    return set_password(db, account.email, new)


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
