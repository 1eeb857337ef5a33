"""The `sfumato` command line, run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from benchmarks.testkit.processes import REPO, ChildProcess
from benchmarks.testkit.waits import free_port, wait_until


def sfumato(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SFUMATO_DATA_DIR": str(data_dir)}
    result = subprocess.run(
        [sys.executable, "-m", "sfumato", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_accounts_and_keys_lifecycle(tmp_path: Path) -> None:
    assert "up to date" in sfumato(tmp_path, "migrate").stdout
    created = sfumato(
        tmp_path, "accounts", "create", "Ada@Example.com", "--plan", "pro", "--credits", "50"
    )
    assert "ada@example.com" in created.stdout and "plan=pro" in created.stdout
    duplicate = sfumato(tmp_path, "accounts", "create", "ada@example.com", check=False)
    assert duplicate.returncode == 1 and "exists already" in duplicate.stderr
    bad_plan = sfumato(
        tmp_path, "accounts", "create", "b@example.com", "--plan", "gold", check=False
    )
    assert bad_plan.returncode == 1 and "unknown plan" in bad_plan.stderr
    assert "credits=50" in sfumato(tmp_path, "accounts", "list").stdout

    made = sfumato(
        tmp_path, "keys", "create", "ada@example.com", "--name", "laptop", "--expires-in", "30"
    )
    plaintext = made.stdout.strip().splitlines()[-1]
    assert plaintext.startswith("sfm_") and len(plaintext) > 40
    key_id = made.stdout.split()[2]
    listing = sfumato(tmp_path, "keys", "list", "ada@example.com").stdout
    assert key_id in listing and "laptop" in listing and "active" in listing
    assert plaintext not in listing and plaintext[:10] in listing
    assert (
        not list(tmp_path.glob("*.db"))
        or plaintext.encode() not in (tmp_path / "sfumato.db").read_bytes()
    )

    assert "deactivated" in sfumato(tmp_path, "keys", "deactivate", key_id).stdout
    assert "active" in sfumato(tmp_path, "keys", "activate", key_id).stdout
    assert "revoked" in sfumato(tmp_path, "keys", "revoke", key_id).stdout
    again = sfumato(tmp_path, "keys", "activate", key_id, check=False)
    assert again.returncode == 1 and "stays revoked" in again.stderr


def test_credits_plans_and_the_audit_trail(tmp_path: Path) -> None:
    sfumato(tmp_path, "accounts", "create", "grace@example.com", "--credits", "10")
    granted = sfumato(
        tmp_path, "accounts", "credit", "grace@example.com", "25", "--reason", "promo"
    )
    assert "credits=35" in granted.stdout
    no_reason = sfumato(tmp_path, "accounts", "credit", "grace@example.com", "5", check=False)
    assert no_reason.returncode != 0
    assert (
        "plan=enterprise"
        in sfumato(tmp_path, "accounts", "set-plan", "grace@example.com", "enterprise").stdout
    )
    unknown = sfumato(tmp_path, "accounts", "set-plan", "grace@example.com", "gold", check=False)
    assert unknown.returncode == 1 and "unknown plan" in unknown.stderr
    shown = sfumato(tmp_path, "accounts", "show", "grace@example.com").stdout
    assert "plan=enterprise" in shown
    assert "balance 35  (ledger total 35)" in shown
    assert "grant" in shown and "promo" in shown and "initial grant" in shown


def test_demo_then_serve_answers_with_the_printed_key(tmp_path: Path) -> None:
    port = free_port()
    printed = sfumato(tmp_path, "demo", "--base-url", f"http://127.0.0.1:{port}").stdout
    key = next(word for word in printed.split() if word.startswith("sfm_"))
    assert f"http://127.0.0.1:{port}/v1/images/generate" in printed, "the example names the port"
    assert sfumato(tmp_path, "demo").stdout.count(key) >= 1, "the same key on a second run"
    server = ChildProcess.sfumato(
        ["serve", "--port", str(port)], {"SFUMATO_DATA_DIR": str(tmp_path)}, tmp_path / "log"
    ).start()
    try:
        url = f"http://127.0.0.1:{port}/v1/account"

        def answered() -> httpx.Response | None:
            try:
                return httpx.get(url, headers={"x-api-key": key}, timeout=2)
            except httpx.HTTPError:
                return None

        response = wait_until(answered, 60, "serve up")
        assert response.status_code == 200
        assert response.json()["data"]["plan"]["tier"] == "paid"
    finally:
        server.stop()
    # uvicorn re-raises the SIGTERM it handled once the lifespan has shut down cleanly.
    log = (tmp_path / "log").read_text()
    assert "Application shutdown complete" in log
    # The in-memory broker has no host; kombu must not be left to warn about it.
    assert "No hostname was supplied" not in log


def test_version_is_the_package_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    assert sfumato(tmp_path, "--version").stdout.strip() == f"sfumato {version('sfumato')}"


def test_key_and_plan_changes_from_the_cli_reach_a_running_embedded_server(
    tmp_path: Path,
) -> None:
    """The server caches callers; the CLI's changes, made from another process, clear the cache
    through the marker beside the SQLite database, so each shows on the very next request."""
    sfumato(tmp_path, "accounts", "create", "cli@example.com", "--plan", "pro")
    made = sfumato(tmp_path, "keys", "create", "cli@example.com", "--name", "cached")
    key, key_id = made.stdout.strip().splitlines()[-1], made.stdout.split()[2]
    port = free_port()
    server = ChildProcess.sfumato(
        ["serve", "--port", str(port)], {"SFUMATO_DATA_DIR": str(tmp_path)}, tmp_path / "log"
    ).start()
    url = f"http://127.0.0.1:{port}/v1/account"
    try:
        wait_until(lambda: _get(url, key) is not None, 60, "serve up")
        with httpx.Client(headers={"x-api-key": key}, timeout=10) as client:

            def statuses() -> list[int]:
                return [client.get(url).status_code for _ in range(3)]

            assert statuses() == [200] * 3
            sfumato(tmp_path, "keys", "deactivate", key_id)
            assert statuses() == [401] * 3
            sfumato(tmp_path, "keys", "activate", key_id)
            assert statuses() == [200] * 3
            sfumato(tmp_path, "accounts", "set-plan", "cli@example.com", "enterprise")
            assert client.get(url).json()["data"]["plan"]["id"] == "enterprise"
            sfumato(tmp_path, "keys", "revoke", key_id)
            assert statuses() == [401] * 3
    finally:
        server.stop()


def _get(url: str, key: str) -> httpx.Response | None:
    try:
        return httpx.get(url, headers={"x-api-key": key}, timeout=2)
    except httpx.HTTPError:
        return None


def test_operator_commands_print_one_json_document_with_json(tmp_path: Path) -> None:
    """`--json` on migrate, the accounts, keys and models commands and demo (issue 38 item 9):
    stdout is one JSON document, named as the API names things."""

    def as_json(*args: str) -> Any:
        return json.loads(sfumato(tmp_path, *args, "--json").stdout)

    migrated = as_json("migrate")
    assert migrated["revision"] and migrated["previousRevision"] is None
    assert migrated["migrated"] is True
    again = {**migrated, "previousRevision": migrated["revision"], "migrated": False}
    assert as_json("migrate") == again
    account = as_json("accounts", "create", "ada@example.com", "--plan", "pro", "--credits", "50")
    assert account["email"] == "ada@example.com" and account["plan"] == "pro"
    assert account["creditBalance"] == 50 and account["admin"] is False
    assert [listed["id"] for listed in as_json("accounts", "list")] == [account["id"]]
    assert (
        as_json("accounts", "credit", "ada@example.com", "5", "--reason", "t")["creditBalance"]
        == 55
    )
    assert as_json("accounts", "set-plan", "ada@example.com", "free")["plan"] == "free"
    assert as_json("accounts", "set-admin", "ada@example.com")["admin"] is True
    shown = as_json("accounts", "show", "ada@example.com")
    assert shown["ledgerTotal"] == 55 and shown["consistent"] is True
    assert [entry["amount"] for entry in shown["ledger"]] == [50, 5]
    made = as_json("keys", "create", "ada@example.com", "--name", "ci", "--expires-in", "1")
    assert made["key"].startswith("sfm_") and made["state"] == "active"
    assert made["expiresAt"].endswith("Z") and made["lastUsedAt"] is None
    listed = as_json("keys", "list", "ada@example.com")
    assert [key["id"] for key in listed] == [made["id"]] and "key" not in listed[0]
    assert as_json("keys", "rename", made["id"], "build")["name"] == "build"
    assert as_json("keys", "deactivate", made["id"])["state"] == "deactivated"
    assert as_json("keys", "activate", made["id"])["state"] == "active"
    assert as_json("keys", "revoke", made["id"])["state"] == "revoked"
    models = as_json("models", "list", "--dir", str(tmp_path / "models"))
    assert {row["model"] for row in models} == {"builtin pipeline"}
    demo = as_json("demo", "--base-url", "http://example.test:9000/")
    assert demo["email"] == "demo@sfumato.local" and demo["key"].startswith("sfm_")
    assert demo["baseUrl"] == "http://example.test:9000"
    assert demo["apiUrl"] == "http://example.test:9000/v1"
    assert demo["dashboardUrl"] == "http://example.test:9000/dashboard"
    assert Path(demo["keyFile"]).read_text().strip() == demo["key"]
    assert Path(demo["passwordFile"]).read_text().strip() == demo["password"]
    printed = sfumato(tmp_path, "demo").stdout
    assert demo["key"] in printed and demo["password"] in printed, "the same sign-in as text"
