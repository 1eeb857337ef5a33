"""Sessions in core: the rolling week within the absolute lifetime, expiry, sign-out, and the
end of every session of an account when its password changes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from core.accounts import passwords
from core.accounts import service as accounts
from core.clock import utcnow
from core.db import Database
from core.service_config import load_config
from core.sessions import service as sessions

# The absolute lifetime these tests run with (SFUMATO_SESSION_ABSOLUTE_HOURS' default).
ABSOLUTE = timedelta(days=30)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'sessions.db'}")
    database.migrate()
    accounts.sync_plans(database, load_config(None))
    yield database
    database.dispose()


def test_a_session_rolls_a_week_past_its_last_use_and_no_further(db: Database) -> None:
    account = accounts.create_account(db, "roll@example.com", "free", 0)
    started = sessions.start(db, account.id, ABSOLUTE)
    now = utcnow()
    six_days = sessions.resume(db, started.token, ABSOLUTE, now + timedelta(days=6))
    assert six_days is not None and six_days.extended
    # A week from the last use, not from the sign-in.
    assert sessions.resume(db, started.token, ABSOLUTE, now + timedelta(days=12)) is not None
    assert sessions.resume(db, started.token, ABSOLUTE, now + timedelta(days=20)) is None
    assert sessions.purge_expired(db) == 0  # not yet expired by the real clock
    assert sessions.resume(db, "not-a-token", ABSOLUTE) is None


def test_a_session_ends_its_absolute_lifetime_after_sign_in_however_often_used(
    db: Database,
) -> None:
    """Issue 31 L9: the rolling expiry alone renewed a used session forever."""
    account = accounts.create_account(db, "absolute@example.com", "free", 0)
    lifetime = timedelta(days=10)
    started = sessions.start(db, account.id, lifetime)
    now = utcnow()
    for day in range(1, 10):  # used every day: each use rolls the expiry on
        assert sessions.resume(db, started.token, lifetime, now + timedelta(days=day)) is not None
    assert sessions.resume(db, started.token, lifetime, now + timedelta(days=10, minutes=1)) is None
    # A shorter setting applies to sessions already running.
    assert sessions.resume(db, started.token, timedelta(days=2), now + timedelta(days=3)) is None
    short = sessions.start(db, account.id, timedelta(hours=1))
    assert short.expires_at - utcnow() <= timedelta(hours=1)


def test_sign_out_and_a_password_change_end_sessions(db: Database) -> None:
    account = accounts.create_account(db, "end@example.com", "free", 0)
    passwords.set_password(db, "end@example.com", "first password")
    laptop = sessions.start(db, account.id, ABSOLUTE)
    phone = sessions.start(db, account.id, ABSOLUTE)
    sessions.end(db, laptop.token)
    assert sessions.resume(db, laptop.token, ABSOLUTE) is None
    signed_in = sessions.resume(db, phone.token, ABSOLUTE)
    assert signed_in is not None and sessions.csrf_matches(signed_in, phone.csrf_token)
    assert not sessions.csrf_matches(signed_in, "forged")
    assert not sessions.csrf_matches(signed_in, None)
    passwords.change_password(db, account.id, "first password", "second password")
    assert sessions.resume(db, phone.token, ABSOLUTE) is None
    with pytest.raises(accounts.AccountError):
        passwords.change_password(db, account.id, "first password", "third password")
