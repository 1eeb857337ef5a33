"""A faulty network between a client and a real server: a small HTTP-aware TCP proxy.

Each request is forwarded upstream on its own connection (`Connection: close`) and the answer
relayed back byte for byte (streams included), unless a fault planned for its path applies:
`drop_response(path)` forwards the request, lets the server answer in full, then closes the
client's connection without a byte (the answer is lost after the server acted on it);
`answer(path, status, headers, body)` answers in the server's place (a 503, a 429 with
Retry-After, a 404 for an endpoint the server "lacks"). Faults apply `times` times (None:
always); `seen` lists every request path that reached the proxy.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from benchmarks.testkit.waits import free_port


@dataclass
class Fault:
    path: str
    times: int | None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def applies(self, path: str) -> bool:
        return path.split("?")[0].endswith(self.path) and (self.times is None or self.times > 0)

    def use(self) -> None:
        if self.times is not None:
            self.times -= 1


class FaultyProxy:
    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.port = free_port()
        self.faults: list[Fault] = []
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.closed = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def drop_response(self, path: str, times: int | None = 1) -> None:
        with self.lock:
            self.faults.append(Fault(path, times))

    def answer(
        self,
        path: str,
        status: int,
        headers: dict[str, str] | None = None,
        error: dict[str, Any] | None = None,
        times: int | None = 1,
    ) -> None:
        body = json.dumps({"error": error or {"message": f"HTTP {status}"}}).encode()
        with self.lock:
            self.faults.append(Fault(path, times, status, headers or {}, body))

    def _serve(self) -> None:
        while not self.closed:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        with client:
            request = _read_request(client)
            if request is None:
                return
            head, body = request
            path = head.split(b" ", 2)[1].decode()
            with self.lock:
                self.seen.append(path)
                fault = next((fault for fault in self.faults if fault.applies(path)), None)
                if fault is not None:
                    fault.use()
            if fault is not None and fault.status is not None:
                client.sendall(_response(fault))
                return
            with socket.create_connection(self.upstream) as upstream:
                upstream.sendall(_close_after(head) + body)
                while chunk := upstream.recv(65536):
                    if fault is None:
                        client.sendall(chunk)
            # A dropped answer: the server has answered in full; the client gets nothing.

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def _read_request(client: socket.socket) -> tuple[bytes, bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = client.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head, body


def _close_after(head: bytes) -> bytes:
    lines = [
        line
        for line in head.split(b"\r\n")
        if not line.lower().startswith((b"connection:", b"keep-alive:"))
    ]
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n"


def _response(fault: Fault) -> bytes:
    reason = {404: "Not Found", 429: "Too Many Requests", 503: "Service Unavailable"}
    lines = [
        f"HTTP/1.1 {fault.status} {reason.get(fault.status or 0, 'Error')}",
        "Content-Type: application/json",
        f"Content-Length: {len(fault.body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in fault.headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + fault.body


@contextmanager
def faulty_proxy(upstream: str) -> Iterator[FaultyProxy]:
    proxy = FaultyProxy(upstream)
    proxy.thread.start()
    try:
        yield proxy
    finally:
        proxy.close()
