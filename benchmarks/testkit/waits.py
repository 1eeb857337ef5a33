"""Loopback ports for the servers a test or a benchmark starts, and bounded polls."""

from __future__ import annotations

import socket
import time
from typing import Any

# The ports free_port handed out, held until this process exits.
_RESERVED_PORTS: list[socket.socket] = []


def free_port() -> int:
    """A loopback port nobody else on this machine is given while this process runs: bound
    with port 0 (the kernel's choice) and held, not listening, with SO_REUSEADDR. The server it
    is for binds it with SO_REUSEADDR too (uvicorn, redis-server, `socket.create_server` and
    `http.server` all do) and may listen on it, while neither another bind to port 0 nor an
    outgoing connection's ephemeral port can take it, from this process or another test worker;
    a port merely found free and closed again could be taken before the server bound it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    _RESERVED_PORTS.append(sock)
    return int(sock.getsockname()[1])


def wait_until(predicate: Any, timeout: float, message: str, interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something true (returned), at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s: {message}")
