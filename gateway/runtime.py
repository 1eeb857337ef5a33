"""What one gateway process holds: the shared services, the job lifecycle, job creation, the rate
limiter, the metrics, the job reads, what style search and asset links use (the sentence model's
functions and their load, the folders searched lately, the link requests running) and, in
embedded mode, the workers running in this process (assembled by `sfumato/processes.py`, the
only place process-wide state is made)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from core.jobs.creation import JobCreation
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from core.styles.assets import LinkSlots
from core.styles.search import FolderCache
from core.styles.semantics import AssetSemantics, SentenceModelLoad
from core.webhooks.deliverer import WebhookDeliverer
from gateway.jobs.reads import JobReads
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
    # One for the process: long-polls woken together share its reads.
    job_reads: JobReads
    semantics: AssetSemantics
    sentence_model: SentenceModelLoad
    folders: FolderCache = field(default_factory=FolderCache)
    link_slots: LinkSlots = field(default_factory=LinkSlots)
    embedded_workers: InProcessWorkers | None = None
    # Sends the webhooks' outbox (core/webhooks/deliverer.py); every gateway runs one.
    deliverer: WebhookDeliverer | None = None
    # The address this gateway listens on, once it does (`sfumato/http_server.py`).
    own_url: str = "http://127.0.0.1"
    # Set when the server begins shutting down (`sfumato/http_server.py`): held event streams end.
    closing: asyncio.Event = field(default_factory=asyncio.Event)
