"""Readiness checks shared by the gateway's and the workers' probe endpoints."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import redis
from sqlalchemy import text

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
