"""Where style extraction's Chromium comes from: CI installs it, the worker image has it."""

from __future__ import annotations

import re

from benchmarks.testkit.processes import REPO


def test_ci_installs_chromium_when_it_is_missing() -> None:
    script = (REPO / ".ci" / "run").read_text()
    assert "command -v chromium" in script
    assert re.search(r"apt-get install -y\b.*\bchromium\b", script)


def test_the_worker_image_has_chromium_and_the_gateway_image_does_not() -> None:
    dockerfile = (REPO / "deploy" / "docker" / "Dockerfile").read_text()
    stages = dict(
        re.findall(r"^FROM \S+ AS (\S+)\n(.*?)(?=^FROM |\Z)", dockerfile, re.MULTILINE | re.DOTALL)
    )
    assert re.search(r"apt-get install[^\n]*\n?[^\n]*\bchromium\b", stages["worker"])
    assert "chromium" not in stages["gateway"] and "chromium" not in stages["runtime"]
    assert stages["worker"].rstrip().count("USER 10001") == 1, "the worker runs unprivileged"
