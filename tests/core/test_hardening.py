"""The third security review's server-side items that live below HTTP (issue 31): the signing
secret (M8), the data dir's mode (L8), SQL parameters kept out of logs (L10), SQLite's
durability (D1). The memory arenas every `sfumato` process limits (M6) are held to a real
process's resident memory in tests/api/test_security.py."""

from __future__ import annotations

import logging
import secrets
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import exc as sqlalchemy_errors
from sqlalchemy import text

from benchmarks.testkit.processes import REPO
from core.db import Database
from core.settings import InsecureSecret, Settings
from tests.support.service import SFUMATO


@pytest.mark.parametrize(
    "key",
    [
        "CHANGE-ME",  # deploy/kubernetes/base/secrets.example.env
        "CHANGE-ME-64-HEX-CHARACTERS",  # the manifests' Secret before it left the base
        "change-me-to-64-random-hex-characters",  # deploy/compose.yaml before make-env.py
        "9f3c1a7e0b5d42c8a6e1f0d3b7c95a24",  # a UUID's 16 random bytes in hex
        "ab" * 40,  # long, and two characters
        "correct horse battery staple",
    ],
)
def test_a_placeholder_or_weak_signing_secret_is_refused(key: str, tmp_path: Path) -> None:
    with pytest.raises(InsecureSecret, match="SFUMATO_SECRET_KEY"):
        Settings(data_dir=tmp_path, secret_key=key).signing_key()


def test_a_strong_signing_secret_is_used_and_its_source_logged_never_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = secrets.token_hex(32)
    with caplog.at_level(logging.INFO, logger="core.settings"):
        assert Settings(data_dir=tmp_path, secret_key=key).signing_key() == key.encode()
        made = Settings(data_dir=tmp_path / "other").signing_key()
    assert len(made) == 64
    assert "signing key from SFUMATO_SECRET_KEY" in caplog.text
    assert "signing key made at" in caplog.text
    assert key not in caplog.text and made.decode() not in caplog.text


def test_serve_refuses_to_start_with_the_manifests_placeholder(tmp_path: Path) -> None:
    done = subprocess.run(
        [*SFUMATO, "serve", "--port", "9"],
        cwd=REPO,
        env={
            "PATH": "",
            "PYTHONPATH": str(REPO),
            "SFUMATO_DATA_DIR": str(tmp_path),
            "SFUMATO_SECRET_KEY": "CHANGE-ME-64-HEX-CHARACTERS",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "error: SFUMATO_SECRET_KEY is a placeholder" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_data_dir_is_the_owners_alone(tmp_path: Path) -> None:
    made = tmp_path / "made"
    Settings(data_dir=made).ensure_data_dir()
    assert made.stat().st_mode & 0o777 == 0o700
    opened = tmp_path / "opened"
    opened.mkdir(mode=0o755)
    opened.chmod(0o755)
    Settings(data_dir=opened).ensure_data_dir()
    assert opened.stat().st_mode & 0o777 == 0o700


def test_a_failed_statement_names_no_parameter(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'sfumato.db'}")
    try:
        db.migrate()
        with pytest.raises(sqlalchemy_errors.IntegrityError) as failed, db.write() as session:
            session.execute(
                text("INSERT INTO accounts (id, email) VALUES (:id, :email)"),
                {"id": None, "email": "someone-private@example.com"},
            )
        assert "someone-private@example.com" not in str(failed.value)
        assert "parameters hidden" in str(failed.value)
    finally:
        db.dispose()


@pytest.mark.parametrize(("setting", "pragma"), [("FULL", 2), ("NORMAL", 1)])
def test_sqlite_commits_as_configured_full_by_default(
    setting: str, pragma: int, tmp_path: Path
) -> None:
    assert Settings(data_dir=tmp_path).sqlite_synchronous == "FULL"
    db = Database(f"sqlite:///{tmp_path / 'sfumato.db'}", setting)
    try:
        with db.read() as session:
            assert session.execute(text("PRAGMA synchronous")).scalar() == pragma
    finally:
        db.dispose()


def test_trusted_proxies_are_addresses_or_networks() -> None:
    """Issue 31 M3: a typo in SFUMATO_TRUSTED_PROXIES stops the start, not silently trusts
    nothing (or the wrong thing)."""
    settings = Settings(trusted_proxies=" 10.0.0.0/8, 192.0.2.7 ,::1,")
    assert settings.trusted_proxy_list == ["10.0.0.0/8", "192.0.2.7", "::1"]
    assert Settings().trusted_proxy_list == []
    for wrong in ("*", "proxy.internal", "10.0.0.1/8"):
        with pytest.raises(ValueError, match="not an IP address or CIDR"):
            Settings(trusted_proxies=wrong)
