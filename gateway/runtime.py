"""What one gateway process holds: the shared services, the job lifecycle, job creation, the rate
limiter, the metrics and, in embedded mode, the workers running in this process (assembled by
`sfumato/processes.py`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from core.jobs.creation import JobCreation
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from gateway.limits import RateLimiter
from gateway.metrics import GatewayMetrics


class InProcessWorkers(Protocol):
    """Workers sharing the gateway's process (embedded mode), started and stopped with it."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Gateway:
    services: Services
    lifecycle: JobLifecycle
    creation: JobCreation
    limiter: RateLimiter
    metrics: GatewayMetrics
    embedded_workers: InProcessWorkers | None = None
    # Set when the server begins shutting down (`gateway/server.py`): held event streams end.
    closing: asyncio.Event = field(default_factory=asyncio.Event)
