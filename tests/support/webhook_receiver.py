"""A webhook receiver on loopback for the tests: it records every request (path, headers, body)
and answers each path with the statuses it is told, in order (then 200; a 3xx redirects to
`/elsewhere`); tests wait on what it received, never on time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Receiver:
    port: int
    received: list[Received] = field(default_factory=list)
    # Per path: the statuses to answer next, first first.
    statuses: dict[str, list[int]] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def answer(self, path: str, *statuses: int) -> None:
        with self.changed:
            self.statuses[path] = list(statuses)

    def of(self, path: str) -> list[Received]:
        with self.changed:
            return [item for item in self.received if item.path == path]

    def wait_for(self, path: str, count: int, timeout: float = 60) -> list[Received]:
        """At least `count` requests to `path` (a hang guard, not a timing)."""
        with self.changed:
            done = self.changed.wait_for(
                lambda: sum(item.path == path for item in self.received) >= count, timeout
            )
        received = self.of(path)
        assert done, f"{path} received {len(received)} of {count}: {received}"
        return received


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with receiver.changed:
                waiting = receiver.statuses.get(self.path, [])
                status = waiting.pop(0) if waiting else 200
                receiver.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                receiver.changed.notify_all()
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("location", "/elsewhere")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def webhook_receiver(port: int = 0) -> Iterator[Receiver]:
    """Listening on `port` (0: any free one) until the block ends."""
    receiver = Receiver(port)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(receiver))
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
