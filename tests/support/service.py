"""Running the service for tests: in-process gateways, real `sfumato` processes, clients."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.waits import free_port, wait_until
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.health import ProbeServer, ReadinessChecks
from core.services import Services
from core.settings import Settings
from gateway.app import create_app
from gateway.runtime import Gateway
from sfumato.http_server import GatewayServer
from sfumato.processes import build_gateway

SFUMATO = [sys.executable, "-m", "sfumato"]


@dataclass
class Mode:
    """Everything that tells one way of running the service from another."""

    name: str
    env: dict[str, str]
    separate_workers: bool

    def settings(self) -> Settings:
        # Strings, as the environment gives them: the settings parse them.
        fields: dict[str, Any] = {
            key.removeprefix("SFUMATO_").lower(): value for key, value in self.env.items()
        }
        return Settings(**fields)


class ThreadedServer:
    """A real uvicorn server on a free port, in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.server = GatewayServer(
            # As sfumato/http_server.py: forwarded headers count only by the app's settings.
            uvicorn.Config(
                app, host="127.0.0.1", port=self.port, log_level="warning", proxy_headers=False
            ),
            app.state.gateway,
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        # A hang guard, not a timing: an embedded start warms every registered model up.
        wait_until(lambda: self.server.started, 120, "server start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@dataclass
class Service:
    """One running deployment for tests: its base URL, its database, its processes."""

    mode: Mode
    services: Services
    gateway: Gateway
    url: str
    # The gateway's monitoring port (`sfumato serve --metrics-port`): /metrics, /healthz, /readyz.
    metrics_url: str
    workers: list[ChildProcess] = field(default_factory=list)

    @property
    def api(self) -> str:
        return self.url + "/v1"

    def new_key(self, credits: int = 1000, plan: str = "pro") -> str:
        email = f"user-{os.urandom(6).hex()}@test.local"
        accounts.create_account(self.services.db, email, plan, credits)
        return api_keys.create_key(self.services.db, email, "test", None).plaintext

    def client(self, key: str | None = None, timeout: float = 90) -> httpx.Client:
        headers = {"x-api-key": key} if key else {}
        return httpx.Client(base_url=self.api, headers=headers, timeout=timeout)

    def balance(self, key: str) -> int:
        caller = authentication.authenticate(self.services.db, key)
        assert caller is not None
        with self.services.db.read() as session:
            from core.credits import repository

            return repository.balance(session, caller.account_id)


@contextmanager
def running_service(mode: Mode, data_dir: Path) -> Iterator[Service]:
    """A gateway in this process plus, in distributed mode, one worker process per queue."""
    # Each service its own namespace: services of one test process share kombu's in-memory
    # broker, and the distributed ones share Redis.
    env = {"SFUMATO_NAMESPACE": f"test-{os.urandom(4).hex()}", **mode.env}
    env["SFUMATO_DATA_DIR"] = str(data_dir)
    mode = Mode(mode.name, env, mode.separate_workers)
    services = Services.from_settings(mode.settings())
    services.prepare()
    gateway = build_gateway(services, run_workers=not mode.separate_workers)
    server = ThreadedServer(create_app(gateway))
    probes = ProbeServer(
        0, ReadinessChecks(services), host="127.0.0.1", exposition=gateway.metrics.exposition
    )
    workers = []
    if mode.separate_workers:
        for queue in ("image", "video", "style"):
            workers.append(
                ChildProcess.sfumato(
                    ["worker", "--queue", queue], env, data_dir / f"worker-{queue}.log"
                ).start()
            )
    server.start()
    probes.start()
    for worker in workers:
        worker.wait_for_log(" ready.")
    service = Service(
        mode=mode,
        services=services,
        gateway=gateway,
        url=server.url,
        metrics_url=f"http://127.0.0.1:{probes.port}",
        workers=workers,
    )
    try:
        # Used once ready, as a load balancer would: the sentence model loads in a background
        # thread at start-up, and a first job sharing the CPU (and GIL) with it ran for seconds.
        wait_until(
            lambda: httpx.get(f"{service.url}/readyz", timeout=5).status_code == 200,
            180,
            "the service ready",
            interval=0.2,
        )
        yield service
    finally:
        probes.stop()
        server.stop()
        for worker in workers:
            worker.stop()
        services.db.dispose()
