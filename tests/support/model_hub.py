"""The stand-in hub for tests, serving the tiny preset repositories (built once per session),
and `sfumato models ...` run as the user runs it, against it."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.testkit.processes import REPO
from models.presets import BY_NAME
from models.testing_hub import HostedRepo, StandInHub
from models.testing_presets import TINY_PRESETS, build_preset_files


@functools.cache
def tiny_repositories() -> dict[str, dict[str, bytes]]:
    """Preset name -> its tiny repository's files (a few seconds, once per test process)."""
    work = Path(tempfile.mkdtemp(prefix="sfumato-tiny-presets-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    return {name: build_preset_files(name, work) for name in TINY_PRESETS}


def hosted(name: str, **changes: object) -> HostedRepo:
    """Preset `name`'s tiny repository at the preset's revision, gated as the real one (or as
    `changes` say)."""
    preset = BY_NAME[name]
    assert preset.repo is not None
    fields: dict[str, object] = {
        "repo_id": preset.repo,
        "revision": preset.revision,
        "files": dict(tiny_repositories()[name]),
        "gated": preset.gated,
    }
    return HostedRepo(**(fields | changes))  # type: ignore[arg-type]


@contextmanager
def standin_hub(*names: str) -> Iterator[StandInHub]:
    hub = StandInHub()
    for name in names:
        hub.add(hosted(name))
    with hub:
        yield hub


def models_env(hub: StandInHub, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `sfumato models` process that reaches only the stand-in hub, with
    its own Hugging Face cache (never the developer's)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("HF_HUB_OFFLINE", "HF_TOKEN", "SFUMATO_MODELS_FILE", "SFUMATO_MODELS_DIR")
    }
    return env | {
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(data_dir / "hf-home"),
        "SFUMATO_DATA_DIR": str(data_dir),
        "PYTHONPATH": str(REPO),
        **extra,
    }


def sfumato_models(
    env: dict[str, str], *args: str, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sfumato", "models", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
    )


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]
