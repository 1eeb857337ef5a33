"""uvicorn's server, telling the gateway when shutdown begins."""

from __future__ import annotations

import socket

import uvicorn

from gateway.runtime import Gateway


class GatewayServer(uvicorn.Server):
    """uvicorn waits for open responses to finish before it shuts the application down, and an
    event stream only finishes when its job does: so the gateway is told first, and its streams
    end cleanly (a reconnect with `Last-Event-ID` picks up on another replica)."""

    def __init__(self, config: uvicorn.Config, gateway: Gateway) -> None:
        super().__init__(config)
        self.gateway = gateway

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.gateway.closing.set()
        await super().shutdown(sockets)
