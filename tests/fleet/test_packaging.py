"""The package metadata: the licence file matches the declared licence, the classifiers match
`requires-python`, every third-party module the service imports is declared (directly or
through a declared dependency), and the wheel carries the data files the code reads (RIFE's
weights), so `pip install .` alone gives a working service."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from benchmarks.testkit.processes import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
# The Python client, a distribution of this repository (clients/python) that the CLI's client
# commands import; the Makefile and the Dockerfiles install it beside the service.
SIBLING_DISTRIBUTIONS = {"sfumato_client"}
FIRST_PARTY = {"sfumato", "gateway", "workers", "pipelines", "models", "core", "benchmarks"}


def test_the_licence_file_is_the_declared_apache_2_0() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_classifiers_name_exactly_the_supported_pythons() -> None:
    supported = SpecifierSet(PROJECT["requires-python"])
    named = {
        classifier.rsplit(" :: ", 1)[1]
        for classifier in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", classifier)
    }
    assert named == {f"3.{minor}" for minor in range(8, 16) if f"3.{minor}" in supported}
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in named


def _imported_modules() -> set[str]:
    names: set[str] = set()
    for package in FIRST_PARTY - {"benchmarks"}:
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return names - FIRST_PARTY - set(sys.stdlib_module_names)


def _declared_closure() -> set[str]:
    """The declared dependencies (extras but dev included) and everything they require, as
    normalised names."""

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    extras = [
        text
        for name, group in PROJECT["optional-dependencies"].items()
        if name != "dev"
        for text in group
    ]
    pending = [Requirement(text) for text in [*PROJECT["dependencies"], *extras]]
    seen: set[str] = set()
    while pending:
        requirement = pending.pop()
        name = norm(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            nested = Requirement(text)
            if nested.marker is None or nested.marker.evaluate({"extra": ""}):
                pending.append(nested)
    return seen


def test_every_imported_distribution_is_declared() -> None:
    distributions = metadata.packages_distributions()
    declared = _declared_closure()
    undeclared = {}
    for module in _imported_modules():
        providers = distributions.get(module, [])
        names = {re.sub(r"[-_.]+", "-", name).lower() for name in providers}
        if names and not names & declared and module not in SIBLING_DISTRIBUTIONS:
            undeclared[module] = sorted(names)
    assert undeclared == {}, "imported but installed outside the package metadata"


def test_the_wheel_carries_rife_network_weights_glyphs_and_licences(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".*", "*.egg-info", "__pycache__", "build", "dist", "data", "tests", "docs", "deploy"
        ),
    )
    wheel_dir = tmp_path / "dist"
    pip_wheel = ["pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    built = subprocess.run(
        [sys.executable, "-m", *pip_wheel, "--wheel-dir", str(wheel_dir), str(source)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheel_dir.glob("sfumato-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        weights = archive.read("pipelines/media/rife_weights/flownet.safetensors")
        glyphs = archive.read("pipelines/builtin/glyphs/fluent_emoji_flat.json.gz")
    assert {
        "pipelines/media/ifnet.py",
        "pipelines/media/rife_weights/LICENSE",
        "pipelines/media/rife_weights/README.md",
    } <= names
    assert weights == (REPO / "pipelines/media/rife_weights/flownet.safetensors").read_bytes()
    # The builtin painter's glyphs, their embeddings, licences and notice (issue 37).
    assert {
        "pipelines/builtin/glyphs/embeddings-v1.npy",
        "pipelines/builtin/glyphs/NOTICE",
        "pipelines/builtin/glyphs/LICENSE-fluent-emoji",
        "pipelines/builtin/glyphs/LICENSE-emojilib",
    } <= names
    assert glyphs == (REPO / "pipelines/builtin/glyphs/fluent_emoji_flat.json.gz").read_bytes()


def test_an_editable_install_is_a_plain_path_entry_without_warnings(tmp_path: Path) -> None:
    """`make run` installs the project editable: setuptools writes one .pth entry for the
    repository's root, not an import hook warning that folders named like the packages may
    shadow them (issue 38 item 15)."""
    source = tmp_path / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".*", "*.egg-info", "__pycache__", "build", "dist", "data", "tests", "docs", "deploy"
        ),
    )
    built = subprocess.run(
        [sys.executable, "-c", "from setuptools import build_meta as b; "
         f"print(b.build_editable({str(tmp_path / 'dist')!r}))"],
        cwd=source, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert "same name" not in built.stdout + built.stderr
    wheel = tmp_path / "dist" / built.stdout.splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        (pth,) = [name for name in archive.namelist() if name.endswith(".pth")]
        assert archive.read(pth).decode().strip() == str(source)
