"""Shared fixtures: the service under test in each mode, accounts and keys, clients.

The HTTP suite runs twice: embedded (SQLite, in-process broker and workers) and distributed
(PostgreSQL, Redis, worker processes) when SFUMATO_TEST_POSTGRES_URL and SFUMATO_TEST_REDIS_URL
are set; `.ci/run` sets them. Without them the distributed runs are reported as skipped.
Storage tests (uploads, references) also ask for a third deployment by indirect
parametrization, `pytest.mark.parametrize("service", [..., "s3"], indirect=True)`: embedded,
with its media in an S3-protocol server the tests start; style extraction on PostgreSQL asks for
"distributed-fetching". Being one fixture, only one of them runs at a time (two embedded
services in one process would share the in-memory broker).

`make test` runs the suite on every core (pytest-xdist, `--dist loadgroup`); docs/testing.md
says how the workers are kept apart: each its own PostgreSQL databases, Redis key namespaces,
ports, data dirs, S3 servers and temporary folders. The tests that load the whole machine share
one worker (the `xdist_group` named WHOLE_MACHINE), one after another.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psycopg
import pytest
import redis

from benchmarks.testkit.pipelines import STEERABLE_PIPELINES
from benchmarks.testkit.sites import site_server
from pipelines.styles import Browser, Fetcher
from tests.support.s3 import s3_server
from tests.support.service import Mode, Service, running_service
from tests.support.styles import loopback_fetcher, session_browser

POSTGRES_URL = os.environ.get("SFUMATO_TEST_POSTGRES_URL")
REDIS_URL = os.environ.get("SFUMATO_TEST_REDIS_URL")
COMMON_ENV = {
    "SFUMATO_PIPELINES": STEERABLE_PIPELINES,
    "SFUMATO_LEASE_SECONDS": "2",
    "SFUMATO_SWEEP_INTERVAL_SECONDS": "0.5",
    "SFUMATO_WAIT_SECONDS": "4",
    "SFUMATO_EVENTS_HEARTBEAT_SECONDS": "0.3",
    "SFUMATO_DISPATCH_GRACE_SECONDS": "1",
    "SFUMATO_CONFIG_FILE": str(Path(__file__).parent / "support" / "generous.toml"),
    # One browser origin allowed to call the API (tests/test_cors.py).
    "SFUMATO_CORS_ORIGINS": "https://app.example.test",
}


def _sqlalchemy_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A database of its own on the test PostgreSQL server (its SQLAlchemy URL), dropped at
    the end; skips the test without one."""
    if not POSTGRES_URL:
        pytest.skip("distributed mode needs SFUMATO_TEST_POSTGRES_URL (set by .ci/run)")
    name = f"sfumato_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = POSTGRES_URL.rpartition("/")
    try:
        yield _sqlalchemy_url(f"{base}/{name}")
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh database on the test PostgreSQL server, dropped at the end."""
    with fresh_postgres_database() as url:
        yield url


WHOLE_MACHINE = "whole-machine"


def pytest_configure(config: pytest.Config) -> None:
    """The file the steerable test pipelines log to (benchmarks/testkit/pipelines.py), one per test
    process, inherited by the worker processes it starts."""
    folder = Path(tempfile.mkdtemp(prefix="sfumato-test-pipelines-"))
    os.environ.setdefault("SFUMATO_TEST_PIPELINE_LOG", str(folder / "events.log"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `whole_machine` (many processes, or timings under load) all go to one
    test worker (`--dist loadgroup`), and first, so that the longest chain of the run starts at
    once while the other workers share out the rest."""
    machine = [item for item in items if item.get_closest_marker("whole_machine")]
    for item in machine:
        item.add_marker(pytest.mark.xdist_group(WHOLE_MACHINE))
    rest = [item for item in items if not item.get_closest_marker("whole_machine")]
    items[:] = machine + rest


def pytest_sessionstart(session: pytest.Session) -> None:
    """The test Redis database emptied once per run, by the process that runs no tests itself
    when the run is parallel (before its workers start): what a killed earlier run left there
    goes, and no worker empties it under another. Every deployment of a run keeps to its own
    keys (`SFUMATO_NAMESPACE`, keys named by random ids)."""
    if REDIS_URL and not hasattr(session.config, "workerinput"):
        redis.Redis.from_url(REDIS_URL).flushdb()


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not REDIS_URL:
        pytest.skip("distributed mode needs SFUMATO_TEST_REDIS_URL (set by .ci/run)")
    return REDIS_URL


def embedded_mode() -> Mode:
    return Mode("embedded", dict(COMMON_ENV), separate_workers=False)


def distributed_mode(database_url: str, broker_url: str) -> Mode:
    env = {
        **COMMON_ENV,
        "SFUMATO_DATABASE_URL": database_url,
        "SFUMATO_BROKER_URL": broker_url,
        "SFUMATO_NAMESPACE": f"test-{uuid.uuid4().hex[:8]}",
    }
    return Mode("distributed", env, separate_workers=True)


# The fetcher allowed to reach this machine's test web servers (SFUMATO_FETCH_ALLOW), and a short
# render budget for style extraction (the fixture sites render in 1-2 s; the hung one is cut off
# sooner).
FETCHING_ENV = {"SFUMATO_FETCH_ALLOW": "127.0.0.1", "SFUMATO_STYLE_RENDER_SECONDS": "8"}


def s3_mode(storage_url: str) -> Mode:
    """Embedded with media in S3, fetching from this machine (`FETCHING_ENV`)."""
    env = {**COMMON_ENV, "SFUMATO_STORAGE_URL": storage_url, **FETCHING_ENV}
    return Mode("s3", env, separate_workers=False)


def distributed_fetching_mode(database_url: str, broker_url: str) -> Mode:
    """Distributed, fetching from this machine (`FETCHING_ENV`): style extraction on
    PostgreSQL and worker processes."""
    distributed = distributed_mode(database_url, broker_url)
    env = {**distributed.env, **FETCHING_ENV}
    return Mode("distributed-fetching", env, separate_workers=True)


@pytest.fixture(scope="session", params=["embedded", "distributed"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    with ExitStack() as stack:
        if request.param == "embedded":
            mode = embedded_mode()
        elif request.param == "s3":
            mode = s3_mode(stack.enter_context(s3_server()))
        elif request.param == "distributed-fetching":
            mode = distributed_fetching_mode(
                request.getfixturevalue("postgres_database"), request.getfixturevalue("redis_url")
            )
        else:
            mode = distributed_mode(
                request.getfixturevalue("postgres_database"), request.getfixturevalue("redis_url")
            )
        data_dir: Path = tmp_path_factory.mktemp(f"service-{request.param}")
        yield stack.enter_context(running_service(mode, data_dir))


@pytest.fixture
def key(service: Service) -> str:
    return service.new_key()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Headless Chromium, one for the whole test session (tests/support/styles.py)."""
    yield from session_browser()


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The fixture sites of tests/fixtures/sites, served on loopback."""
    with site_server() as url:
        yield url


@pytest.fixture(scope="session")
def fetcher(base_url: str) -> Iterator[Fetcher]:
    with loopback_fetcher(base_url) as fetch:
        yield fetch


@pytest.fixture(params=["rendered", "text"])
def engine(request: pytest.FixtureRequest) -> Browser | None:
    """Each style extraction test on both engines: the browser (rendered), None (text only)."""
    return request.getfixturevalue("chromium") if request.param == "rendered" else None
