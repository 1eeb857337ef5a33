"""A gateway's start: the sentence model of style search loads in the background, `/readyz` says
not-ready until it has, and the event loop keeps answering meanwhile."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import embedded_mode
from tests.support.service import Process, free_port, wait_until

pytestmark = [pytest.mark.slow]


def test_the_sentence_model_loads_in_the_background_and_readyz_waits_for_it(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**embedded_mode().env, "SFUMATO_DATA_DIR": str(tmp_path)}
    gateway = Process(["serve", "--port", str(port)], env, tmp_path / "serve.log").start()
    try:
        wait_until(lambda: _answers(f"{url}/healthz"), 240, "gateway up")
        up_at = time.monotonic()
        answers: list[tuple[int, dict[str, str]]] = []
        slowest_liveness = 0.0
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            ready = httpx.get(f"{url}/readyz", timeout=10)
            body = ready.json()
            answers.append((ready.status_code, body.get("checks") or body["error"]["details"]))
            if ready.status_code == 200:
                break
            started = time.monotonic()
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
            slowest_liveness = max(slowest_liveness, time.monotonic() - started)
            time.sleep(0.1)
        status, checks = answers[0]
        assert status == 503 and checks["sentenceModel"] == "unavailable", answers[0]
        assert answers[-1] == (200, {"database": "ok", "broker": "ok", "sentenceModel": "ok"})
        # The loop answered while the model loaded: no probe waited for the load itself (a
        # ratio within the run, as the machine's load stretches both).
        loading = time.monotonic() - up_at
        assert slowest_liveness < loading / 2, (slowest_liveness, loading)
    finally:
        gateway.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
