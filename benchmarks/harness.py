"""Running the service for benchmarks: real `sfumato` processes, their databases, an API client.

The gateway always runs as its own `sfumato serve` process, never as a thread of the benchmark,
so the client side never competes with it for an interpreter lock.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import psycopg
import redis
from sqlalchemy import select

from benchmarks.httpclient import HttpConnection, Response, request_bytes

# A generate pipeline steered by its prompt: `[sleep S] ...` takes S seconds, paints solid images.
from benchmarks.testkit.pipelines import STEERABLE_PIPELINES
from benchmarks.testkit.processes import ChildProcess, running
from benchmarks.testkit.waits import free_port
from core.accounts import api_keys
from core.accounts import service as accounts
from core.db import Database
from core.services import Services
from core.settings import Settings
from core.tables import JobRow

T = TypeVar("T")
Mode = Literal["embedded", "distributed"]
MODES: tuple[Mode, ...] = ("embedded", "distributed")
POSTGRES_URL = os.environ.get(
    "SFUMATO_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
# Database 10 is the benchmarks' own: it is flushed before each distributed deployment.
REDIS_URL = os.environ.get("SFUMATO_BENCH_REDIS_URL", "redis://127.0.0.1:6379/10")
TERMINAL = ("completed", "failed")
CONFIG_FILE = Path(__file__).with_name("generous.toml")


def wait_for_http(child: ChildProcess, port: int, timeout: float = 60) -> None:
    """Until the server answers anything on the port."""
    probe = request_bytes("GET", "/v1/openapi.json", port, {})

    async def answered() -> bool:
        try:
            connection = await HttpConnection.open(port)
        except OSError:
            return False
        try:
            await connection.send(probe)
            return True
        finally:
            connection.close()

    child.wait_for(lambda: asyncio.run(answered()), timeout, f"anything answering on port {port}")


def wait_until_ready(child: ChildProcess, port: int, timeout: float = 180) -> None:
    """Until the gateway's `/readyz` answers 200: its database, broker and style search's
    sentence model (loaded in a background thread at start-up, seconds of CPU) all ready, so no
    measured window shares the CPU with a start-up still going on."""
    wait_for_http(child, port, timeout)
    probe = request_bytes("GET", "/readyz", port, {})

    async def ready() -> bool:
        connection = await HttpConnection.open(port)
        try:
            return (await connection.send(probe)).status == 200
        finally:
            connection.close()

    child.wait_for(
        lambda: asyncio.run(ready()), timeout, f"the gateway on port {port} ready", interval=0.2
    )


@dataclass(frozen=True)
class JobTimes:
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass
class Deployment:
    """A running service: its gateway process and port, and its database."""

    gateway: ChildProcess
    port: int
    db: Database

    def new_key(self) -> str:
        """A key of an account on the plan generous.toml lifts every cap of."""
        email = f"bench-{uuid.uuid4().hex[:12]}@bench.local"
        accounts.create_account(self.db, email, "enterprise", 1_000_000)
        return api_keys.create_key(self.db, email, "benchmark", None).plaintext

    def job_times(self, job_ids: Sequence[str]) -> dict[str, JobTimes]:
        with self.db.read() as session:
            rows = session.execute(
                select(JobRow.id, JobRow.created_at, JobRow.started_at, JobRow.finished_at).where(
                    JobRow.id.in_(job_ids)
                )
            ).all()
        return {row.id: JobTimes(row.created_at, row.started_at, row.finished_at) for row in rows}


def service_view(env: dict[str, str]) -> Services:
    """The service's own view of the deployment, from the same variables as its processes."""
    settings = Settings.model_validate(
        {name.removeprefix("SFUMATO_").lower(): value for name, value in env.items()}
    )
    services = Services.from_settings(settings)
    # Migrate and write the plans before any server starts, so that keys can be made at once.
    services.prepare()
    return services


@contextmanager
def temporary_postgres_database() -> Iterator[str]:
    name = f"sfumato_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = POSTGRES_URL.rpartition("/")
    try:
        yield f"{base}/{name}".replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def deployment(
    mode: Mode, data_dir: Path, extra_env: dict[str, str] | None = None
) -> Iterator[Deployment]:
    """`embedded`: one `sfumato serve` with its workers, SQLite and the in-memory broker.
    `distributed`: `sfumato serve --no-workers` and one `sfumato worker --queue image` process
    on a temporary PostgreSQL database and Redis."""
    data_dir.mkdir(parents=True)
    env = {
        "SFUMATO_DATA_DIR": str(data_dir),
        "SFUMATO_PIPELINES": STEERABLE_PIPELINES,
        "SFUMATO_CONFIG_FILE": str(CONFIG_FILE),
        **(extra_env or {}),
    }
    port = free_port()
    serve = ["serve", "--port", str(port), "--log-level", "warning"]
    with ExitStack() as stack:
        if mode == "distributed":
            redis.Redis.from_url(REDIS_URL).flushdb()
            env |= {
                "SFUMATO_DATABASE_URL": stack.enter_context(temporary_postgres_database()),
                "SFUMATO_BROKER_URL": REDIS_URL,
                "SFUMATO_NAMESPACE": f"bench-{uuid.uuid4().hex[:8]}",
            }
            serve.append("--no-workers")
        services = service_view(env)
        stack.callback(services.db.dispose)
        gateway = stack.enter_context(
            running(ChildProcess.sfumato(serve, env, data_dir / "serve.log"))
        )
        if mode == "distributed":
            worker = ["worker", "--queue", "image", "--log-level", "warning"]
            stack.enter_context(running(ChildProcess.sfumato(worker, env, data_dir / "worker.log")))
        wait_until_ready(gateway, port)
        yield Deployment(gateway, port, services.db)


class ApiClient:
    """Calls the service's JSON API over one keep-alive connection, reopened when the server
    closed it while idle."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._connection: HttpConnection | None = None

    async def call(
        self, method: str, path: str, key: str, body: dict[str, Any] | None = None
    ) -> Response:
        if self._connection is None or self._connection.closed:
            self._connection = await HttpConnection.open(self.port)
        headers = {"x-api-key": key}
        payload = b""
        if body is not None:
            headers["content-type"] = "application/json"
            payload = json.dumps(body).encode()
        return await self._connection.send(
            request_bytes(method, "/v1" + path, self.port, headers, payload)
        )

    async def create_image(self, key: str, prompt: str) -> str:
        """A cheap image job; its id."""
        response = await self.call(
            "POST", "/images/generate", key, {"prompt": prompt, "quality": "low"}
        )
        if response.status != 202:
            raise RuntimeError(f"create answered {response.status}: {response.body[:300]!r}")
        job_id: str = response.json()["data"]["id"]
        return job_id

    async def wait_terminal(self, key: str, job_id: str) -> Response:
        """Long-poll until the job is completed or failed."""
        while True:
            response = await self.call("GET", f"/jobs/{job_id}?wait=true", key)
            if response.status != 200:
                raise RuntimeError(f"job read answered {response.status}: {response.body!r}")
            if response.json()["data"]["status"] in TERMINAL:
                return response

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


@dataclass(frozen=True)
class Options:
    quick: bool
    # A fresh directory for this run's data dirs and server logs.
    work_dir: Path
    # How long a timed soak runs (`chaos`); None: its default.
    minutes: float | None = None

    def scaled(self, full: T, quick: T) -> T:
        return quick if self.quick else full
