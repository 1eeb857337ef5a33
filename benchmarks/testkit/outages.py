"""Dependencies the fault tests and the chaos soak can take away and give back: a TCP proxy in
front of the shared PostgreSQL, a Redis server of their own (the shared ones are never touched),
and a small disk that can be filled."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import redis

from benchmarks.testkit.waits import free_port, wait_until


class TcpProxy:
    """Forwards 127.0.0.1:port to a target. `cut()` drops every connection and refuses new ones
    (closes them at once) until `restore()`; `cut_on(marker)` cuts when a client sends bytes
    containing `marker`, before they reach the target (a query in flight when the server
    vanishes); `drop_on(marker)` drops every connection then but lets new ones through (a
    blink: a failover, a reset connection); `silence_on(marker)` swallows those bytes and all
    the client sends after them on that connection, which stays open (a server gone silent:
    a half-open connection, no FIN, no answer). `client_sends` counts the clients' writes that
    reached it (a query's round trip is one)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        # A new socket takes the process's default timeout, and Celery's worker shutdown sets
        # it (5 s) for the whole process, racing to put it back when in-process workers stop
        # in parallel: a listener with a timeout would stop accepting after 5 s idle.
        self._listener.settimeout(None)
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._marker: bytes | None = None
        self._refuse_after_marker = True
        self._silence_after_marker = False
        self.tripped = threading.Event()
        self.client_sends = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self, refuse: bool = True) -> None:
        with self._lock:
            self._cut = refuse
            doomed = list(self._open)
            self._open.clear()
        for sock in doomed:
            _close(sock)

    def cut_on(self, marker: bytes) -> None:
        self._refuse_after_marker = True
        self._silence_after_marker = False
        self._marker = marker

    def drop_on(self, marker: bytes) -> None:
        self._refuse_after_marker = False
        self._silence_after_marker = False
        self._marker = marker

    def silence_on(self, marker: bytes) -> None:
        self._silence_after_marker = True
        self._marker = marker

    def restore(self) -> None:
        with self._lock:
            self._cut = False
            self._marker = None

    def close(self) -> None:
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refused = self._cut
            if refused:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            # Both ends block without a deadline (the process's default timeout, above, would
            # drop an idle pooled connection).
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        silenced = False
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if from_client:
                    with self._lock:
                        self.client_sends += 1
                marker = self._marker
                if from_client and marker is not None and marker in data:
                    self._marker = None
                    self.tripped.set()
                    if self._silence_after_marker:
                        silenced = True
                    else:
                        self.cut(refuse=self._refuse_after_marker)
                        return
                if not silenced:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextmanager
def tcp_proxy(host: str, port: int) -> Iterator[TcpProxy]:
    proxy = TcpProxy(host, port)
    try:
        yield proxy
    finally:
        proxy.close()


class RedisServer:
    """A `redis-server` of the test's own on a free port, without persistence: killing it loses
    every queued message, as a restart of an in-memory Redis does."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = (self.folder / f"redis-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=log,
            stderr=log,
        )
        wait_until(self._answers, 10, f"redis-server on {self.port}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def _answers(self) -> bool:
        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=0.2).ping())
        except redis.RedisError:
            return False


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.kill()


class DiskUnavailable(Exception):
    """A small disk cannot be made here; the message says why."""


class SmallDisk:
    """A filesystem of its own, `size_bytes` large, mounted at `path` (a tmpfs: mounting one
    needs root, CAP_SYS_ADMIN), which `fill()` fills to the last page and `free()` empties: a
    full disk without filling the machine's. A loop file would need the same privilege."""

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path = path
        self.size_bytes = size_bytes
        self._ballast = path / ".ballast"

    def mount(self) -> None:
        if os.geteuid() != 0:
            raise DiskUnavailable("mounting a size-limited tmpfs needs root (CAP_SYS_ADMIN)")
        self.path.mkdir(parents=True, exist_ok=True)
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size_bytes}", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if mounted.returncode != 0:
            raise DiskUnavailable(f"mount -t tmpfs refused: {mounted.stderr.strip()}")

    def unmount(self) -> None:
        # Lazy: a process still holding a file there (a killed worker's) cannot keep it busy.
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)

    def fill(self) -> None:
        """Until not one more page fits (ENOSPC)."""
        with self._ballast.open("ab", buffering=0) as ballast:
            for chunk in (1 << 20, 1 << 12):
                with suppress(OSError):
                    while True:
                        ballast.write(b"\0" * chunk)

    def free(self) -> None:
        self._ballast.unlink(missing_ok=True)


@contextmanager
def small_disk(path: Path, size_bytes: int) -> Iterator[SmallDisk]:
    """A `SmallDisk` mounted for the block; DiskUnavailable when it cannot be made here."""
    disk = SmallDisk(path, size_bytes)
    disk.mount()
    try:
        yield disk
    finally:
        disk.unmount()
