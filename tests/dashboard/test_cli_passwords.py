"""`sfumato accounts set-password / set-admin` and the demo's dashboard sign-in, as real
processes: the password is read from standard input and kept only as an argon2 hash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks.testkit.processes import REPO
from core.accounts import passwords
from core.accounts import service as accounts
from core.db import Database


def sfumato(
    data_dir: Path, *args: str, stdin: str = "", check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "sfumato", *args],
        cwd=REPO,
        env={**os.environ, "SFUMATO_DATA_DIR": str(data_dir)},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_set_password_from_a_pipe_and_set_admin(tmp_path: Path) -> None:
    sfumato(tmp_path, "accounts", "create", "ada@example.com")
    short = sfumato(
        tmp_path, "accounts", "set-password", "ada@example.com", stdin="too short\n", check=False
    )
    assert short.returncode == 1 and "at least 10 characters" in short.stderr
    unknown = sfumato(
        tmp_path,
        "accounts",
        "set-password",
        "no@example.com",
        stdin="long enough pw\n",
        check=False,
    )
    assert unknown.returncode == 1 and "no account" in unknown.stderr
    done = sfumato(
        tmp_path, "accounts", "set-password", "ada@example.com", stdin="correct horse battery\n"
    )
    assert "password set" in done.stdout
    assert b"correct horse battery" not in (tmp_path / "sfumato.db").read_bytes()
    db = Database(f"sqlite:///{tmp_path / 'sfumato.db'}")
    try:
        assert passwords.check_password(db, "ADA@example.com", "correct horse battery") is not None
        assert passwords.check_password(db, "ada@example.com", "correct horse batter") is None
        assert not accounts.find_account(db, "ada@example.com").is_admin
        assert "admin=yes" in sfumato(tmp_path, "accounts", "set-admin", "ada@example.com").stdout
        assert accounts.find_account(db, "ada@example.com").is_admin
    finally:
        db.dispose()


def test_demo_prints_the_dashboard_and_a_password_kept_beside_the_key(tmp_path: Path) -> None:
    printed = sfumato(tmp_path, "demo", "--base-url", "http://127.0.0.1:8123").stdout
    assert "http://127.0.0.1:8123/dashboard" in printed
    password = (tmp_path / "demo-dashboard-password").read_text().strip()
    assert len(password) >= 10 and f"password {password}" in printed
    assert (tmp_path / "demo-dashboard-password").stat().st_mode & 0o077 == 0
    again = sfumato(tmp_path, "demo").stdout
    assert f"password {password}" in again, "the same password on a second run"
    db = Database(f"sqlite:///{tmp_path / 'sfumato.db'}")
    try:
        assert passwords.check_password(db, "demo@sfumato.local", password) is not None
    finally:
        db.dispose()
