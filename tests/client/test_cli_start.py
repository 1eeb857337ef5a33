"""The command line starts at once: its entry point, `--help` and `--version` load none of the
service's heavy libraries (each gateway replica and worker pod pays what the CLI imports before
it parses an argument). Checked through `sys.modules` in a fresh interpreter, not by timing;
`python -m benchmarks startup` times it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "diffusers", "transformers", "sqlalchemy", "celery", "sentence_transformers")
# Loaded by the commands that need them, never to parse arguments (Typer itself formats help
# with rich).
ALSO_DEFERRED = ("pydantic", "httpx", "numpy", "PIL", "core.services")

PROBE = """
import json, sys
from sfumato.cli import app, main
argv = sys.argv[1:]
if argv:
    sys.argv = ["sfumato", *argv]
    try:
        main()
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_modules(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [(), ("--help",), ("--version",), ("models", "--help")])
def test_the_entry_point_help_and_version_load_no_heavy_library(argv: tuple[str, ...]) -> None:
    loaded = loaded_modules(*argv)
    assert "typer" in loaded  # the probe did import the CLI
    for name in (*HEAVY, *ALSO_DEFERRED):
        assert name not in loaded, f"`sfumato {' '.join(argv)}` imported {name}"


def test_a_command_that_runs_still_finds_what_it_needs() -> None:
    """The deferred imports happen when a command runs: a usage error of a generation command
    is checked against core's lists, which loads the contract then."""
    done = subprocess.run(
        [sys.executable, "-m", "sfumato", "generate", "a cat", "--ratio", "7:5"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "", "SFUMATO_API_URL": "http://127.0.0.1:9/v1"},
    )
    assert done.returncode == 2
    assert "'7:5' is not one of 1:1, 3:2" in done.stderr
