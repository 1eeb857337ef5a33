"""The sync client is generated from the async one (clients/python/generate_sync.py): the
committed _sync is what the generator writes today, a change to _async shows as stale until
regenerated, and the rules turn async code into its blocking twin or refuse it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from benchmarks.testkit.processes import REPO

GENERATOR = REPO / "clients" / "python" / "generate_sync.py"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_sync", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_sync_client_is_what_the_generator_writes() -> None:
    checked = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_change_to_the_async_code_is_stale_until_regenerated(
    generator: ModuleType, tmp_path: Path
) -> None:
    source, target = tmp_path / "_async", tmp_path / "_sync"
    shutil.copytree(generator.SOURCE, source)
    shutil.copytree(generator.TARGET, target, ignore=shutil.ignore_patterns("__pycache__"))
    images = source / "images.py"
    images.write_text(
        images.read_text().replace(
            "        mask: FileInput | None = None,\n",
            "        mask: FileInput | None = None,\n        tiling: bool | None = None,\n",
        )
    )
    (target / "gone.py").write_text("# its async source was removed\n")
    modules = generator.sync_modules(source)
    assert generator.stale(modules, target) == ["gone.py", "images.py"]
    assert generator.write(modules, target) == ["gone.py", "images.py"]
    assert generator.stale(modules, target) == [] and not (target / "gone.py").exists()
    written = (target / "images.py").read_text()
    # The new argument comes after `mask`, the edit's last before `webhook`.
    added = "        tiling: bool | None = None,\n        webhook: Webhook | None = None,\n"
    assert added + "    ) -> Job:" in written
    assert "async def" not in written and "await" not in written


ASYNC_SOURCE = '''"""What AsyncThing reads."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from sfumato_client._async.jobs import AsyncJob


class AsyncThing:
    async def __aenter__(self) -> AsyncThing:
        return self

    @asynccontextmanager
    async def lines(self, http: httpx.AsyncClient, job: AsyncJob) -> AsyncIterator[str]:
        async with http.stream("GET", "/") as response:
            async for line in response.aiter_lines():
                yield line
        await asyncio.sleep(1)
        await http.aclose()
'''
BLOCKING_TWIN = '''"""What Thing reads."""

import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from sfumato_client._sync.jobs import Job


class Thing:
    def __enter__(self) -> Thing:
        return self

    @contextmanager
    def lines(self, http: httpx.Client, job: Job) -> Iterator[str]:
        with http.stream("GET", "/") as response:
            for line in response.iter_lines():
                yield line
        time.sleep(1)
        http.close()
'''


def test_the_rules_make_the_blocking_twin(generator: ModuleType) -> None:
    assert generator.unasync(ASYNC_SOURCE) == BLOCKING_TWIN


def test_async_code_no_rule_translates_is_refused(generator: ModuleType) -> None:
    with pytest.raises(ValueError, match="Await"):
        generator.unasync("async def f():\n    return await(g())\n")
