"""The fixture sites (tests/fixtures/sites) on a loopback port: what style extraction fetches in
the style tests and in the chaos soak."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SITES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "sites"
REDIRECTS = {"/moved/": "/relocated/"}


class SiteHandler(SimpleHTTPRequestHandler):
    # `imagetrap` serves HTML under an image type, as a hostile site may.
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".xcustom": "image/x-custom"}

    def do_GET(self) -> None:
        if self.path in REDIRECTS:
            self.send_response(301)
            self.send_header("Location", REDIRECTS[self.path])
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the output is about styles, not requests."""


@contextmanager
def site_server() -> Iterator[str]:
    """The fixture sites on a loopback port; yields the base URL."""
    handler = functools.partial(SiteHandler, directory=str(SITES))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
