"""The Pythons `make` accepts are those pyproject.toml allows (issue 38 item 14)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.testkit.processes import REPO

sys.path.insert(0, str(REPO / "tools"))
import supported_python

PYPROJECT = (REPO / "pyproject.toml").read_text()


def test_the_supported_versions_are_read_from_requires_python() -> None:
    assert supported_python.bounds('requires-python = ">=3.11,<3.13"') == ((3, 11), (3, 13))
    assert supported_python.supported_versions(PYPROJECT) == ["3.11", "3.12"]


def test_this_interpreter_is_accepted() -> None:
    checked = subprocess.run([sys.executable, str(REPO / "tools/supported_python.py")])
    assert checked.returncode == 0


def test_a_newer_python_is_refused_with_the_versions_that_are_supported() -> None:
    newer = Path("/root/.pyenv/versions/3.13.0/bin/python3.13")
    if not newer.exists():
        pytest.skip("no Python 3.13 on this machine")
    checked = subprocess.run(
        [str(newer), str(REPO / "tools/supported_python.py")], capture_output=True, text=True
    )
    assert checked.returncode == 1
    assert checked.stderr.startswith("Python 3.11 or 3.12 is required (")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_picks_a_supported_python() -> None:
    chosen = subprocess.run(
        ["make", "-s", "--eval", "chosen-python: ; @echo $(PYTHON)", "chosen-python"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={name: value for name, value in os.environ.items() if name != "PYTHON"},
    ).stdout.strip()  # fmt: skip
    assert chosen
    assert subprocess.run([chosen, str(REPO / "tools/supported_python.py")]).returncode == 0
