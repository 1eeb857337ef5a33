"""A minimal HTTP/1.1 keep-alive client on raw asyncio sockets.

httpx costs more CPU per request than the servers it would measure; this client only writes the
request bytes and reads the status line, the headers and a Content-Length body, so one client
process can load a server harder than the server can answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, cast

HOST = "127.0.0.1"
CONTENT_LENGTH = b"\r\ncontent-length:"


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    # time.time() when the last byte arrived, to compare with timestamps the service stored.
    received_at: float

    def json(self) -> Any:
        return json.loads(self.body)


def request_bytes(
    method: str, path: str, port: int, headers: dict[str, str], body: bytes = b""
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"host: {HOST}:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method == "POST":
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class HttpConnection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._waiter: asyncio.Future[Response] | None = None
        self.closed = False

    @classmethod
    async def open(cls, port: int) -> HttpConnection:
        loop = asyncio.get_running_loop()
        _transport, connection = await loop.create_connection(cls, HOST, port)
        return connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._waiter is not None:
            self._parse()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ConnectionError("the server closed the connection"))

    def _parse(self) -> None:
        head_end = self._buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = bytes(self._buffer[:head_end]).lower()
        start = head.find(CONTENT_LENGTH)
        if start < 0:
            raise ValueError("responses without Content-Length are not supported")
        start += len(CONTENT_LENGTH)
        stop = head.find(b"\r\n", start)
        length = int(head[start:] if stop < 0 else head[start:stop])
        total = head_end + 4 + length
        if len(self._buffer) < total:
            return
        response = Response(int(head[9:12]), bytes(self._buffer[head_end + 4 : total]), time.time())
        del self._buffer[:total]
        waiter, self._waiter = self._waiter, None
        assert waiter is not None
        waiter.set_result(response)

    def send(self, request: bytes) -> asyncio.Future[Response]:
        """Write a whole request; the future resolves with its response."""
        assert self._transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        return self._waiter

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
