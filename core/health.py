"""A process's health: the readiness checks of its dependencies, and the probe port that serves
them with its metrics (gateways and workers alike, `--metrics-port`)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import redis
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import REGISTRY
from sqlalchemy import text

from core.errors import envelope
from core.services import Services

log = logging.getLogger(__name__)

# A probe answers within the kubelet's default timeout (1 s) even when a dependency hangs.
CHECK_TIMEOUT_SECONDS = 0.8


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, str]


class ReadinessChecks:
    """The database answers a query, the broker (Redis) a PING; each as "ok" or "unavailable".
    The error itself goes to the log only: probes need no key, and an exception's text names
    hosts, users and drivers."""

    def __init__(self, services: Services) -> None:
        self.services = services
        settings = services.settings
        self._redis = (
            redis.Redis.from_url(
                settings.broker_url,
                socket_timeout=CHECK_TIMEOUT_SECONDS,
                socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
            )
            if settings.uses_redis
            else None
        )

    def _database(self) -> None:
        with self.services.db.statements() as connection:
            connection.execute(text("SELECT 1"))

    def _broker(self) -> None:
        if self._redis is not None:
            self._redis.ping()

    def run(self, extra: dict[str, Callable[[], None]] | None = None) -> Readiness:
        """Every check, each "ok" or "unavailable"; `extra` adds the caller's own."""
        checks: dict[str, str] = {}
        every = {"database": self._database, "broker": self._broker, **(extra or {})}
        for name, check in every.items():
            try:
                check()
                checks[name] = "ok"
            except Exception as error:
                first_line = (str(error).splitlines() or [""])[0]
                log.warning(
                    "readiness: %s unavailable: %s: %s", name, type(error).__name__, first_line
                )
                checks[name] = "unavailable"
        return Readiness(all(value == "ok" for value in checks.values()), checks)


class ProbeServer:
    """A process's port for monitoring, apart from any public one. `/healthz`: the process
    answers (liveness). `/readyz`: the database and broker answer and, for a worker, its Celery
    consumer is up and not shutting down (`consuming`). `/metrics`: `exposition()`, by default
    the process-wide registry (a gateway passes its own, which includes that registry)."""

    def __init__(
        self,
        port: int,
        checks: ReadinessChecks,
        consuming: Callable[[], None] | None = None,
        host: str = "",
        exposition: Callable[[], bytes] = lambda: generate_latest(REGISTRY),
    ) -> None:
        self.checks = checks
        self.extra_checks: dict[str, Callable[[], None]] = (
            {"consumer": consuming} if consuming is not None else {}
        )
        self.exposition = exposition
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]

    def start(self) -> None:
        threading.Thread(target=self._server.serve_forever, name="probes", daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        probe = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, probe.exposition(), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    self._json(200, {"status": "ok"})
                elif path == "/readyz":
                    readiness = probe.checks.run(probe.extra_checks)
                    if readiness.ready:
                        self._json(200, {"status": "ready", "checks": readiness.checks})
                    else:
                        self._error(503, "SERVICE_UNAVAILABLE", "Not ready", readiness.checks)
                else:
                    self._error(404, "NOT_FOUND", "Not found", None)

            def _error(
                self, status: int, code: str, message: str, details: dict[str, str] | None
            ) -> None:
                self._json(status, envelope(code, message, details))

            def _json(self, status: int, body: dict[str, Any]) -> None:
                self._send(status, json.dumps(body).encode(), "application/json")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Probes every few seconds would drown the worker's log."""

        return Handler
