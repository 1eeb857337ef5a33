"""`python -m benchmarks` on an install without the dev extras (issue 38 item 12): it starts,
and a benchmark that needs a dev extra says what to install instead of a traceback.

"Without the dev extras" is made by a sitecustomize that refuses to import every distribution
the dev extras bring and the service's own dependencies do not."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest

from benchmarks.testkit.processes import REPO

BLOCKER = """
import sys

BLOCKED = {blocked!r}


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""


def _name(requirement: str) -> str:
    return re.split(r"[\\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """The distributions these need, transitively (extras' requirements left out)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        todo.extend(_name(r) for r in requires if "extra ==" not in r)
    return seen


def dev_only_modules() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = _closure({_name(r) for r in project["dependencies"]})
    extras = project["optional-dependencies"]
    dev = {_name(r) for r in extras["dev"] + extras["diffusion"] if not r.startswith("sfumato")}
    dev_only = _closure(dev) - base
    return {
        module
        for module, dists in packages_distributions().items()
        if {_name(d) for d in dists} <= dev_only
    }


def run_without_dev(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(dev_only_modules())))
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{site}:{REPO}"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_blocker_hides_the_dev_extras(tmp_path: Path) -> None:
    blocked = dev_only_modules()
    assert {"moto", "pytest", "hypothesis", "schemathesis"} <= blocked
    assert "httpx" not in blocked and "torch" not in blocked


@pytest.mark.slow
def test_benchmarks_start_without_the_dev_extras(tmp_path: Path) -> None:
    answer = run_without_dev(tmp_path, "--help")
    assert answer.returncode == 0, answer.stderr
    assert "chaos" in answer.stdout


@pytest.mark.slow
def test_a_benchmark_that_needs_a_dev_extra_says_what_to_install(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    answer = run_without_dev(tmp_path, "chaos", "--doc", str(doc))
    assert answer.returncode == 2
    assert "Traceback" not in answer.stderr
    assert "`chaos` needs moto, from the dev extras" in answer.stderr
    assert "pip install -e '.[dev]'" in answer.stderr
    assert not doc.exists()
