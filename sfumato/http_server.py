"""The gateway's HTTP server: uvicorn on h11, with the bounds a public port needs.

- a request head (request line and headers) over `max_header_bytes` is refused (h11's limit on
  an incomplete event; httptools, uvicorn's default parser, has none and reads any size);
- a request head must arrive whole within `header_timeout_seconds` of the connection opening (or
  of the previous answer on a kept-alive connection), so a client trickling a header line every
  few seconds loses its connection instead of holding it forever;
- at most `max_concurrency` connections and requests at once; beyond that uvicorn answers 503.
Refusals the server makes before the app sees a request are plain text (docs/api.md).

`GatewayServer` tells the gateway when shutdown begins, so its held event streams end cleanly.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from core.settings import Settings
from gateway.runtime import Gateway


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head."""

    head_timeout_seconds = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._disarm_head_deadline()  # the head is in; the body has the app's own limits

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._arm_head_deadline()  # the next request on this connection starts its clock
        super().on_response_complete()

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        self._head_deadline = self.loop.call_later(self.head_timeout_seconds, self._head_timed_out)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(
    app: Any, host: str, port: int, settings: Settings, log_level: str
) -> uvicorn.Config:
    """The uvicorn configuration of a gateway serving `app` on (host, port)."""
    protocol = type(
        "BoundedH11Protocol",
        (BoundedH11Protocol,),
        {"head_timeout_seconds": settings.header_timeout_seconds},
    )
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=protocol,
        h11_max_incomplete_event_size=settings.max_header_bytes,
        limit_concurrency=settings.max_concurrency,
        timeout_graceful_shutdown=10,
        access_log=False,
    )


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
