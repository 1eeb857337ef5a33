"""The gateway's Prometheus metrics, served on the process's metrics port (`sfumato serve
--metrics-port`, core/health.py's ProbeServer), never on the public one.

Requests are counted by method, route template (`/v1/jobs/{job_id}`, never the raw path, so
the label set stays small) and status, and timed by method and route. The labelled children
are cached per (method, route, status), so a request costs two clock reads, one dict lookup, an
increment and an observation. Long-polls held are read when scraped. Each app has its own
registry (tests run several gateways in one process); the exposition also shows the
process-wide registry, where the embedded workers' metrics (workers/metrics.py) and the
process's own live.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.events import JobEvents

UNROUTED = "unrouted"
# The access log: a line a request (`sfumato serve --access-log`; off by default, at WARNING).
# It names the route's template, never the path's values, the query, a header or the body, so no
# key, password or signature reaches it.
ACCESS_LOG = "gateway.access"
_access = logging.getLogger(ACCESS_LOG)
# A caller's own request id is taken when it looks like one; otherwise one is made.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# Any other method a client invents is counted as "other", so labels stay few.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class GatewayMetrics:
    def __init__(self, events: JobEvents) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "sfumato_http_requests",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sfumato_http_request_duration_seconds",
            "Seconds from a request's arrival to its last byte (long-polls included)",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.jobs_created = Counter(
            "sfumato_jobs_created",
            "Jobs created through this gateway, by type (idempotent replays not counted)",
            ["type"],
            registry=self.registry,
        )
        self.long_polls = Gauge(
            "sfumato_long_polls_held",
            "`wait=true` reads held open now, waiting for their job to change",
            registry=self.registry,
        )
        self.long_polls.set_function(lambda: events.held)
        self.webhook_deliveries = Counter(
            "sfumato_webhook_deliveries",
            "Webhook delivery attempts by outcome: sent (a 2xx), retried (failed, tried again "
            "later), failed (failed for the last time)",
            ["outcome"],
            registry=self.registry,
        )
        self.webhook_latency = Histogram(
            "sfumato_webhook_delivery_latency_seconds",
            "Seconds from a job event to its webhook's delivery (retries included)",
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400),
            registry=self.registry,
        )
        self.webhook_attempt = Histogram(
            "sfumato_webhook_attempt_duration_seconds",
            "Seconds one webhook attempt took, from connecting to the answer read",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def job_created(self, job_type: str) -> None:
        self.jobs_created.labels(job_type).inc()

    def webhook_sent(self, latency_seconds: float, attempt_seconds: float) -> None:
        self.webhook_deliveries.labels("sent").inc()
        self.webhook_latency.observe(latency_seconds)
        self.webhook_attempt.observe(attempt_seconds)

    def webhook_retried(self, attempt_seconds: float) -> None:
        self.webhook_deliveries.labels("retried").inc()
        self.webhook_attempt.observe(attempt_seconds)

    def webhook_failed(self) -> None:
        self.webhook_deliveries.labels("failed").inc()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        children = self._children.get((method, route, status))
        if children is None:
            children = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(method, route),
            )
            self._children[(method, route, status)] = children
        children[0].inc()
        children[1].observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry) + generate_latest(REGISTRY)


class MetricsMiddleware:
    """Outermost: counts every answer, including those of the auth and rate-limit middleware,
    and writes it to the access log when that is on."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            method = scope["method"] if scope["method"] in METHODS else "other"
            route = _route_of(scope)
            seconds = time.perf_counter() - started
            self.metrics.observe(method, route, status, seconds)
            if _access.isEnabledFor(logging.INFO):
                _log_access(scope, method, route, status, seconds)


def _log_access(scope: Scope, method: str, route: str, status: int, seconds: float) -> None:
    given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
    request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
    duration_ms = round(seconds * 1000, 1)
    _access.info(
        "%s %s %d %.1f ms %s",
        method,
        route,
        status,
        duration_ms,
        request_id,
        extra={
            "requestId": request_id,
            "method": method,
            "route": route,
            "status": status,
            "durationMs": duration_ms,
        },
    )


def _route_of(scope: Scope) -> str:
    """The template of the route that served the request, as routing left it in the scope (the
    full path of a route of an included router is FastAPI's effective route). An answer given
    before routing (a 401, a 413, a 429 of the middleware) has none: `unrouted`."""
    effective = scope.get("fastapi", {}).get("effective_route_context")
    template = getattr(effective, "path_format", None)
    if template is None:
        route = scope.get("route")
        template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return str(template) if template is not None else UNROUTED
