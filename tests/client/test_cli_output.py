"""What the `sfumato` command prints for people and for scripts (issue 38 items 9 and 10):
classic help (`PROMPT`, `--ratio TEXT`), `--json` on the commands with a result, the preset
catalogue's header and marks, and the licence named where `make run` suggests a model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from benchmarks.testkit.processes import REPO
from models.presets import BY_NAME, CPU_PRESET, OPERATIONS
from sfumato.cli import app
from sfumato.cli.models import models_greeting

# What Typer's own help writes and a person would copy as syntax.
TYPER_MARKS = re.compile(r"\{\w+\}|<(str|int|float|bool|path|list\[\w+\])>")


def every_command_path() -> list[list[str]]:
    """Every command's words, nested groups included."""
    paths: list[list[str]] = []

    def walk(command: object, words: list[str]) -> None:
        children = getattr(command, "commands", None)
        if children is None:
            paths.append(words)
            return
        for name, child in children.items():
            walk(child, [*words, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_every_commands_help_is_plain() -> None:
    paths = every_command_path()
    assert ["generate"] in paths and ["models", "pull"] in paths and ["jobs", "show"] in paths
    for words in paths:
        result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "100"})
        assert result.exit_code == 0, (words, result.output)
        assert not TYPER_MARKS.search(result.output), (words, result.output)


def test_generate_help_names_its_argument_and_value_types() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sfumato", "generate", "--help"],
        cwd=REPO, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "COLUMNS": "100"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "sfumato generate [OPTIONS] PROMPT\n" in result.stdout
    assert re.search(r"--ratio TEXT\s", result.stdout)
    assert re.search(r"--variations INTEGER\s", result.stdout)
    assert re.search(r"--json\s+The result as one JSON document", result.stdout)


# The commands that run until stopped and print no result: every other one takes --json.
LONG_RUNNING = [["serve"], ["worker"]]


@pytest.mark.parametrize("words", every_command_path(), ids=" ".join)
def test_every_command_with_a_result_offers_json(words: list[str]) -> None:
    result = CliRunner().invoke(app, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert ("--json" in result.output) == (words not in LONG_RUNNING), words


def test_presets_have_a_header_and_mark_what_serves_each_operation(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["models", "presets", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == [
        "PRESET", "OPERATION", "SPEED", "MODEL", "DOWNLOAD", "MEMORY", "LICENCE"
    ]  # fmt: skip
    serving = {line.split()[2] for line in lines[1:-1] if line.startswith("*")}
    assert serving == set(OPERATIONS), "with no model pulled, a builtin serves every operation"
    assert lines[-1] == "(*: serves its operation now)"


def test_presets_as_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["models", "presets", "--dir", str(tmp_path), "--json"])
    rows = json.loads(result.stdout)
    by_operation: dict[str, list[str]] = {}
    for row in rows:
        if row["serving"]:
            by_operation.setdefault(row["operation"], []).append(row["name"])
    assert sorted(by_operation) == sorted(OPERATIONS)
    assert all(len(names) == 1 for names in by_operation.values()), by_operation
    turbo = next(row for row in rows if row["name"] == "sd-turbo")
    assert turbo["licence"] == "sai-nc-community" and turbo["serving"] is False


def test_the_greeting_names_the_licence_of_the_model_it_suggests(tmp_path: Path) -> None:
    preset = BY_NAME[CPU_PRESET]
    greeting = models_greeting(tmp_path)
    assert f"pull {preset.repo}" in greeting
    assert f"its licence, {preset.licence}, is non-commercial" in greeting
