"""Whether an interpreter is one that pyproject.toml's `requires-python` allows.

`python tools/supported_python.py`: exit 0 for a supported interpreter, else say which versions
are and exit 1. The Makefile runs it with each candidate to pick the Python of `.venv`. Plain
string work, no tomllib: it must answer on the older interpreters it refuses too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def bounds(pyproject: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """`requires-python = ">=3.11,<3.13"` -> ((3, 11), (3, 13)): the lowest allowed, the first
    refused."""
    spec = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject, re.MULTILINE)
    if spec is None:
        raise ValueError("pyproject.toml has no requires-python")
    found = dict(re.findall(r"(>=|<)\s*(\d+\.\d+)", spec.group(1)))
    low, high = (tuple(int(part) for part in found[op].split(".")) for op in (">=", "<"))
    return (low[0], low[1]), (high[0], high[1])


def supported_versions(pyproject: str) -> list[str]:
    (major, low), (_, high) = bounds(pyproject)
    return [f"{major}.{minor}" for minor in range(low, high)]


def main() -> int:
    pyproject = PYPROJECT.read_text()
    low, high = bounds(pyproject)
    if low <= sys.version_info[:2] < high:
        return 0
    allowed = " or ".join(supported_versions(pyproject))
    found = ".".join(str(part) for part in sys.version_info[:3])
    print(f"Python {allowed} is required ({sys.executable} is {found})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
