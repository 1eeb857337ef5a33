"""The chaos soak for one minute (`python -m benchmarks chaos` runs it for five): real gateways
and workers under load from another process, faults injected at random, then every invariant
over the whole history holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.chaos.faults import FAULT_KINDS
from benchmarks.chaos.invariants import INVARIANTS
from benchmarks.chaos.soak import soak

pytestmark = [
    pytest.mark.slow,
    pytest.mark.whole_machine,
    pytest.mark.distributed,
    pytest.mark.timeout(900),
]


def test_a_minute_of_chaos_loses_nothing(postgres_database: str, tmp_path: Path) -> None:
    """`postgres_database`: skipped without PostgreSQL; the soak makes a database of its own
    there (its checks read every row), and runs its own Redis server."""
    outcome = soak(1.0, tmp_path)
    assert outcome.accepted > 0 and len(outcome.faults) >= len(FAULT_KINDS) - 1
    assert {fault.kind for fault in outcome.faults} >= set(FAULT_KINDS[:4])
    found = {name: examples[:3] for name, examples in outcome.violations.items() if examples}
    assert not found, found
    assert list(outcome.violations) == list(INVARIANTS)
