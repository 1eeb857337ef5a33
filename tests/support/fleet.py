"""A distributed deployment of real processes for the fleet tests: several `sfumato serve
--no-workers` gateways and `sfumato worker` processes sharing one PostgreSQL, one Redis and
(optionally) one S3-protocol server."""

from __future__ import annotations

import json
import os
import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.waits import free_port, wait_until
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.credits import repository as credits_repository
from core.service_config import merge_tables
from core.services import Services
from tests.support.service import Mode

GENEROUS = Path(__file__).with_name("generous.toml")


def config_file(folder: Path, overrides: dict[str, Any]) -> Path:
    """A configuration file: generous.toml with `overrides` merged into it, table by table."""
    merged = merge_tables(tomllib.loads(GENEROUS.read_text()), overrides)
    path = folder / f"config-{uuid.uuid4().hex[:6]}.toml"
    path.write_text("\n".join(_toml_tables(merged, ())))
    return path


def _toml_tables(table: dict[str, Any], path: tuple[str, ...]) -> Iterator[str]:
    """Tables of scalars and lists (all a configuration file holds); JSON strings, numbers and
    lists are TOML too."""
    scalars = {key: value for key, value in table.items() if not isinstance(value, dict)}
    if scalars:
        yield "[" + ".".join(json.dumps(part) for part in path) + "]"
        for key, value in scalars.items():
            yield f"{json.dumps(key)} = {json.dumps(value)}"
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _toml_tables(value, (*path, key))


@dataclass
class Gateway:
    process: ChildProcess
    port: int
    metrics_port: int

    @property
    def metrics_url(self) -> str:
        """The gateway's own monitoring port: /metrics, /healthz, /readyz."""
        return f"http://127.0.0.1:{self.metrics_port}"

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Fleet:
    env: dict[str, str]
    folder: Path
    services: Services
    gateways: list[Gateway] = field(default_factory=list)
    workers: list[ChildProcess] = field(default_factory=list)

    def add_gateway(self) -> Gateway:
        port, metrics_port = free_port(), free_port()
        log = self.folder / f"gateway-{port}.log"
        args = ["serve", "--no-workers", "--port", str(port), "--metrics-port", str(metrics_port)]
        process = ChildProcess.sfumato(args, self.env, log).start()
        gateway = Gateway(process, port, metrics_port)
        self.gateways.append(gateway)
        return gateway

    def add_worker(self, queue: str, *args: str, env: dict[str, str] | None = None) -> ChildProcess:
        index = len(self.workers)
        log = self.folder / f"worker-{queue}-{index}.log"
        process = ChildProcess.sfumato(
            ["worker", "--queue", queue, *args], {**self.env, **(env or {})}, log
        )
        self.workers.append(process.start())
        return process

    def wait_ready(self) -> None:
        for gateway in self.gateways:
            wait_until(lambda g=gateway: _answers(g.url), 60, f"gateway on {gateway.port}")
        for worker in self.workers:
            worker.wait_for_log(" ready.")

    def new_key(self, credits: int = 100_000, plan: str = "pro") -> str:
        email = f"fleet-{os.urandom(6).hex()}@test.local"
        accounts.create_account(self.services.db, email, plan, credits)
        return api_keys.create_key(self.services.db, email, "fleet", None).plaintext

    def balance(self, key: str) -> int:
        caller = authentication.authenticate(self.services.db, key)
        assert caller is not None
        with self.services.db.read() as session:
            return credits_repository.balance(session, caller.account_id)

    def client(self, gateway: Gateway, key: str, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=gateway.api, headers={"x-api-key": key}, timeout=timeout)

    def stop(self) -> None:
        for process in [*(gateway.process for gateway in self.gateways), *self.workers]:
            process.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


LOG_TAIL_LINES = 40


@contextmanager
def running_fleet(
    env: dict[str, str], folder: Path, gateways: int = 0, workers: tuple[str, ...] = ()
) -> Iterator[Fleet]:
    """`env`: the deployment's SFUMATO_* variables (its database, broker, storage)."""
    env = {"SFUMATO_NAMESPACE": f"fleet-{uuid.uuid4().hex[:8]}", **env}
    env["SFUMATO_DATA_DIR"] = str(folder)
    services = Services.from_settings(Mode("fleet", env, True).settings())
    services.prepare()
    fleet = Fleet(env, folder, services)
    try:
        for _ in range(gateways):
            fleet.add_gateway()
        for queue in workers:
            fleet.add_worker(queue)
        fleet.wait_ready()
        yield fleet
    except BaseException:
        # What each process logged, in the failing test's captured output (CI shows no files).
        for log in sorted(folder.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            print(f"--- last lines of {log.name} ---", *lines[-LOG_TAIL_LINES:], sep="\n")
        raise
    finally:
        fleet.stop()
        services.db.dispose()


def metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def sample_value(text: str, name: str, **labels: str) -> float:
    return sum(
        value
        for sample, sample_labels, value in metric_samples(text)
        if sample == name and all(sample_labels.get(k) == v for k, v in labels.items())
    )
