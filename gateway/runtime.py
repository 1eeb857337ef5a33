"""What one gateway process holds: the shared services, the dispatcher, embedded workers."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from core.services import Services
from gateway.limits import RateLimiter
from gateway.metrics import GatewayMetrics
from workers.dispatch import Dispatcher
from workers.embedded import EmbeddedWorkers


@dataclass
class Gateway:
    services: Services
    dispatcher: Dispatcher
    limiter: RateLimiter
    metrics: GatewayMetrics
    embedded_workers: EmbeddedWorkers | None = None


async def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway
