"""The gateway's HTTP server: uvicorn on httptools, with the bounds a public port needs.

httptools (llhttp) costs about 0.2 ms less CPU per request than h11 (docs/benchmarks.md), but
bounds nothing: it keeps a header line of any length in memory. So the protocol counts bytes:
- a request head (request line and headers) over `max_header_bytes` is refused with uvicorn's
  answer to malformed HTTP (400 `Invalid HTTP request received.`, plain text, connection closed)
  at the first byte past the bound, however the head is split across reads; so is a chunked
  body's trailer. A head that begins inside the read that ended the request before it
  (pipelining) is counted from the next read: it may pass by one read (256 KiB) at most. (h11,
  used before, checked only incomplete heads: it took any head that came whole in one read.)
  A trailer's fields never reach the app (uvicorn's httptools protocol adds them to the request's
  headers; h11's dropped them);
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
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from core.settings import Settings
from gateway.runtime import Gateway


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on request heads (and trailers) and a deadline
    on each request head."""

    max_head_bytes = 64 * 1024
    head_timeout_seconds = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Bytes received of the header lines being read (a request head, or a chunked body's
        # last chunk and trailer); None while a head is complete and its body streams.
        self._head_bytes: int | None = 0
        self._head_complete = False
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        while self._head_bytes is not None and len(data) > self.max_head_bytes - self._head_bytes:
            # The bound falls inside this read: parse up to it, to see whether the lines end first.
            room = self.max_head_bytes - self._head_bytes
            if room == 0:
                self._refuse_oversized_head()
                return
            self._head_bytes = self.max_head_bytes
            super().data_received(data[:room])
            data = data[room:]
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                return  # refused as malformed, or upgraded: uvicorn drops the rest too
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)

    def on_header(self, name: bytes, value: bytes) -> None:
        # httptools hands a chunked body's trailer fields over as headers too, and uvicorn adds
        # them to the request's: an app reading its body first would then see fields that no
        # proxy in front checked. They are dropped, as h11 dropped them.
        if not self._head_complete:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._head_complete = True
        self._disarm_head_deadline()  # the head is in; the body has the app's own limits
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._head_bytes = None
        super().on_body(body)

    def on_chunk_header(self) -> None:
        # Perhaps the last chunk, which a trailer of header lines may follow: count until data.
        self._head_bytes = 0

    def on_message_complete(self) -> None:
        self._head_bytes = 0  # what follows is the next request's head
        self._head_complete = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        if not self.pipeline and not self.transport.is_closing():
            self._arm_head_deadline()  # the next request on this connection starts its clock
        super().on_response_complete()

    def _refuse_oversized_head(self) -> None:
        message = "Invalid HTTP request received."
        self.logger.warning("%s (header lines over %d bytes)", message, self.max_head_bytes)
        self.send_400_response(message)

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        self._head_deadline = self.loop.call_later(self.head_timeout_seconds, self._head_timed_out)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def server_config(
    app: Any, host: str, port: int, settings: Settings, log_level: str
) -> uvicorn.Config:
    """The uvicorn configuration of a gateway serving `app` on (host, port)."""
    protocol = type(
        "BoundedHttpToolsProtocol",
        (BoundedHttpToolsProtocol,),
        {
            "max_head_bytes": settings.max_header_bytes,
            "head_timeout_seconds": settings.header_timeout_seconds,
        },
    )
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=protocol,
        limit_concurrency=settings.max_concurrency,
        timeout_graceful_shutdown=10,
        # uvicorn's access log stays off: `--access-log` is the gateway's own (gateway.metrics).
        access_log=False,
        # X-Forwarded-* count only from SFUMATO_TRUSTED_PROXIES, in the app (gateway/app.py);
        # uvicorn's own default trusts them from 127.0.0.1.
        proxy_headers=False,
        # JSON logs: uvicorn's own lines go through the root logger's JSON handler too.
        log_config=None if settings.log_format == "json" else LOGGING_CONFIG,
    )


class GatewayServer(uvicorn.Server):
    """uvicorn waits for open responses to finish before it shuts the application down, and an
    event stream only finishes when its job does: so the gateway is told first, and its streams
    end cleanly (a reconnect with `Last-Event-ID` picks up on another replica)."""

    def __init__(self, config: uvicorn.Config, gateway: Gateway) -> None:
        super().__init__(config)
        self.gateway = gateway
        # Called once the server listens (the start-up's phases are logged from there).
        self.on_started: Callable[[], None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers and self.servers[0].sockets:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            host = f"[{host}]" if ":" in host else host
            self.gateway.own_url = f"http://{host}:{port}"
        if self.started and self.on_started is not None:
            self.on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.gateway.closing.set()
        await super().shutdown(sockets)
