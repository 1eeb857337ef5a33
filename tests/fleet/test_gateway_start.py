"""A gateway's start: `/readyz` reports style search's sentence model, loaded in the background
at start-up (a tenth of a second since it runs on NumPy: pipelines/styles/minilm.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.waits import free_port, wait_until
from core.styles.semantics import SentenceModelLoad
from sfumato.processes import asset_semantics
from tests.conftest import embedded_mode

pytestmark = [pytest.mark.slow]


def test_a_started_gateway_is_ready_with_its_sentence_model_loaded(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**embedded_mode().env, "SFUMATO_DATA_DIR": str(tmp_path)}
    gateway = ChildProcess.sfumato(
        ["serve", "--port", str(port)], env, tmp_path / "serve.log"
    ).start()
    try:
        wait_until(lambda: _answers(f"{url}/healthz"), 240, "gateway up")
        wait_until(lambda: _answers(f"{url}/readyz"), 60, "gateway ready")
        ready = httpx.get(f"{url}/readyz", timeout=10).json()
        assert ready == {
            "status": "ready",
            "checks": {"database": "ok", "broker": "ok", "sentenceModel": "ok"},
        }
    finally:
        gateway.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_sentence_model_check_fails_until_loaded_and_names_a_failed_load() -> None:
    """What `/readyz` reports as `sentenceModel` (docs/api.md): unavailable while loading,
    with the error of a load that failed, available once loaded."""
    loaded = False

    def fail() -> None:
        raise OSError("weights missing")

    real = asset_semantics()
    model = SentenceModelLoad(replace(real, load=fail, loaded=lambda: loaded))
    with pytest.raises(RuntimeError, match="loading"):
        model.check()
    model.start()
    wait_until(lambda: _check_error(model) == "OSError: weights missing", 10, "the load failed")
    loaded = True
    model.check()


def _check_error(model: SentenceModelLoad) -> str | None:
    try:
        model.check()
    except RuntimeError as error:
        return str(error)
    return None
