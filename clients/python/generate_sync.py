"""Writes the sync client (src/sfumato_client/_sync) from the async one (_async), the one
source of the code that does I/O: `async`/`await` dropped, `AsyncX` named `X`, asyncio's
sleep and httpx's async names turned into their blocking twins, then the imports sorted and
the code formatted by ruff. `--check` changes nothing and exits 1 when _sync is stale.

Run from anywhere: `python clients/python/generate_sync.py [--check]` (`make client-sync`).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent / "src" / "sfumato_client"
SOURCE = PACKAGE / "_async"
TARGET = PACKAGE / "_sync"

# In order; each a regular expression over the whole text (code, docstrings and comments alike).
RULES: list[tuple[str, str]] = [
    (r"\basync (def|with|for)\b", r"\1"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\basynccontextmanager\b", "contextmanager"),
    (r"^import asyncio$", "import time"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\baiter_lines\b", "iter_lines"),
    (r"\baclose\b", "close"),
    # AsyncClient (ours and httpx's), AsyncIterator, AsyncJob, ...
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"\b_async\b", "_sync"),
]
ASYNC_NODES = (ast.AsyncFunctionDef, ast.AsyncWith, ast.AsyncFor, ast.Await)


def header(name: str) -> str:
    return (
        f"# Generated from sfumato_client/_async/{name} by clients/python/generate_sync.py\n"
        "# (`make client-sync`): change that file, not this one.\n"
    )


def unasync(source: str) -> str:
    """The blocking twin of an async module's text (before sorting and formatting)."""
    for pattern, replacement in RULES:
        source = re.sub(pattern, replacement, source, flags=re.MULTILINE)
    nodes = ast.walk(ast.parse(source))
    leftover = sorted({type(node).__name__ for node in nodes if isinstance(node, ASYNC_NODES)})
    if leftover:
        raise ValueError(f"no rule turns these into blocking code: {', '.join(leftover)}")
    return source


def ruff(args: list[str], source: str, path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(path), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ruff {' '.join(args)} on {path}: {done.stderr.strip()}")
    return done.stdout


def sync_modules(source: Path) -> dict[str, str]:
    """The text of each sync module, by file name, made from the async modules in `source`.
    Ruff reads its settings as for the files in _sync, wherever they are to be written."""
    modules: dict[str, str] = {}
    for path in sorted(source.glob("*.py")):
        text = unasync(path.read_text())
        text = ruff(["check", "--fix", "--select", "I", "--quiet"], text, TARGET / path.name)
        text = ruff(["format", "--quiet"], text, TARGET / path.name)
        modules[path.name] = header(path.name) + text
    return modules


def stale(modules: dict[str, str], target: Path) -> list[str]:
    """The files of `target` that differ from `modules`: changed, missing or left over."""
    present = {path.name for path in target.glob("*.py")}
    return sorted(
        name
        for name in modules.keys() | present
        if name not in modules
        or name not in present
        or (target / name).read_text() != modules[name]
    )


def write(modules: dict[str, str], target: Path) -> list[str]:
    """Brings `target` up to date with `modules`; returns what it changed."""
    target.mkdir(exist_ok=True)
    changed = stale(modules, target)
    for name in changed:
        if name in modules:
            (target / name).write_text(modules[name])
        else:
            (target / name).unlink()
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report a stale _sync")
    modules = sync_modules(SOURCE)
    if parser.parse_args().check:
        names = stale(modules, TARGET)
        for name in names:
            print(f"stale: {TARGET / name} (run make client-sync)")
        return 1 if names else 0
    for name in write(modules, TARGET):
        print(f"wrote {TARGET / name}" if name in modules else f"removed {TARGET / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
