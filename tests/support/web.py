"""A small web server on 127.0.0.1 for fetcher tests; it records every request it gets.

Routes: `/image.png` (a PNG of `IMAGE_COLOUR`), `/text`, `/redirect?to=URL` (302),
`/hops/N` (N redirects, then the PNG), `/big?bytes=N&length=0|1` (N bytes, with or without a
Content-Length), `/slow` (trickles bytes for longer than any test waits), `/status/CODE`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from benchmarks.testkit.images import image_bytes

IMAGE_COLOUR = (230, 110, 30)


@dataclass
class SeenRequest:
    path: str
    host: str


@dataclass
class WebServer:
    port: int
    seen: list[SeenRequest] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def paths(self) -> list[str]:
        return [request.path for request in self.seen]


def _handler(server: WebServer) -> type[BaseHTTPRequestHandler]:
    png = image_bytes(IMAGE_COLOUR)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, content_type: str, length: bool = True) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            server.seen.append(SeenRequest(self.path, self.headers.get("Host", "")))
            parts = urlsplit(self.path)
            query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
            if parts.path == "/image.png":
                self._send(200, png, "image/png")
            elif parts.path == "/text":
                self._send(200, b"hello, not an image", "text/plain")
            elif parts.path == "/redirect":
                self._redirect(query["to"])
            elif parts.path.startswith("/hops/"):
                left = int(parts.path.removeprefix("/hops/"))
                if left:
                    self._redirect(f"/hops/{left - 1}")
                else:
                    self._send(200, png, "image/png")
            elif parts.path == "/big":
                body = b"\0" * int(query["bytes"])
                self._send(200, body, "image/png", length=query.get("length") == "1")
            elif parts.path == "/slow":
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()
                try:
                    for _ in range(100):
                        self.wfile.write(b"\0")
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    pass  # the fetcher gave up, as it should
            elif parts.path.startswith("/status/"):
                self._send(int(parts.path.removeprefix("/status/")), b"", "text/plain")
            else:
                self._send(404, b"", "text/plain")

    return Handler


@contextmanager
def web_server() -> Iterator[WebServer]:
    state = WebServer(port=0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = int(httpd.server_address[1])
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
