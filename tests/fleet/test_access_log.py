"""`sfumato serve --access-log` with `SFUMATO_LOG_FORMAT=json`, as a process (issue 38 item 16):
every line of its output is one JSON object; each request is a line with its request id,
method, route, status and duration; no key or password ever appears."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.waits import free_port, wait_until
from tests.conftest import embedded_mode

pytestmark = [pytest.mark.slow]
KEY = "sfm_live_do-not-log-this-key-0123456789"
PASSWORD = "do-not-log-this-password"


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def serve(tmp_path: Path, *flags: str, **env: str) -> tuple[str, ChildProcess]:
    port = free_port()
    environment = {**embedded_mode().env, "SFUMATO_DATA_DIR": str(tmp_path), **env}
    log = tmp_path / "serve.log"
    process = ChildProcess.sfumato(["serve", "--port", str(port), *flags], environment, log).start()
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _answers(f"{url}/readyz"), 240, "gateway ready")
    return url, process


def test_json_access_log_names_each_request_and_never_a_secret(tmp_path: Path) -> None:
    url, gateway = serve(tmp_path, "--access-log", SFUMATO_LOG_FORMAT="json")
    try:
        refused = httpx.get(
            f"{url}/v1/jobs/0190d5a0-0000-7000-8000-000000000000?x=1",
            headers={"x-api-key": KEY, "x-request-id": "trace-42"},
        )
        assert refused.status_code == 401
        httpx.post(
            f"{url}/dashboard/sign-in",
            data={"email": "someone@example.com", "password": PASSWORD},
        )
        httpx.get(f"{url}/healthz")
    finally:
        gateway.stop()
    output = (tmp_path / "serve.log").read_text()
    assert KEY not in output and PASSWORD not in output
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    access = [line for line in lines if line["logger"] == "gateway.access"]
    by_id = {line["requestId"]: line for line in access}
    traced = by_id["trace-42"]
    assert traced["method"] == "GET" and traced["status"] == 401
    assert traced["route"] in ("unrouted", "/v1/jobs/{id}")
    assert isinstance(traced["durationMs"], float)
    assert any(line["route"] == "/healthz" and line["status"] == 200 for line in access)
    assert any(line["method"] == "POST" and line["status"] >= 400 for line in access)
    assert all(len(line["requestId"]) >= 8 for line in access)


def test_without_the_flag_there_is_no_access_log(tmp_path: Path) -> None:
    url, gateway = serve(tmp_path)
    try:
        httpx.get(f"{url}/v1/openapi.json")
    finally:
        gateway.stop()
    output = (tmp_path / "serve.log").read_text()
    assert "gateway.access" not in output
    assert "/v1/openapi.json" not in output
