"""The parts every worker shares, started for one benchmark alone so that their counters hold
nothing but what the measured fleet did: a PostgreSQL cluster with `pg_stat_statements`, a Redis
server, and an S3-protocol server (moto) behind a counter of requests and bytes."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import redis

from benchmarks.testkit.waits import free_port

BUCKET = "sfumato-bench-media"
# boto3 signs with whatever credentials it finds; moto accepts any. IMDS off, so that a missing
# variable never sends boto3 looking for instance credentials.
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "sfumato-bench",
    "AWS_SECRET_ACCESS_KEY": "sfumato-bench-secret",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    if on_path is None:
        raise RuntimeError("job_cost needs PostgreSQL's server binaries (postgres, initdb)")
    return Path(on_path).parent


def _as_postgres_user(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the `postgres` user."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@dataclass
class PrivatePostgres:
    url: str
    admin_url: str
    # The server's process (as root, the `runuser` above it): its tree is the cluster.
    pid: int

    def statements(self, database: str) -> dict[str, int]:
        """Calls per statement text in `database` since the last reset."""
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT query, calls FROM pg_stat_statements s JOIN pg_database d "
                "ON d.oid = s.dbid WHERE d.datname = %s",
                (database,),
            ).fetchall()
        totals: Counter[str] = Counter()
        for query, calls in rows:
            totals[" ".join(query.split())] += calls
        return dict(totals)

    def reset(self) -> int:
        """Empty the statement counters; the WAL position now."""
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute("SELECT pg_stat_statements_reset()")
            return self.wal_position(connection)

    def wal(self) -> int:
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            return self.wal_position(connection)

    @staticmethod
    def wal_position(connection: psycopg.Connection[Any]) -> int:
        row = connection.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
        assert row is not None
        return int(row[0])


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL cluster of its own on a loopback port, as durable as production's (`fsync`,
    `synchronous_commit` on), with `pg_stat_statements` loaded; one database, `sfumato`."""
    binaries = _postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="sfumato-bench-pg-"))
    data = folder / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(data, "postgres")
    subprocess.run(
        _as_postgres_user(
            [str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
        ),
        check=True,
        capture_output=True,
    )
    port = free_port()
    server = subprocess.Popen(
        _as_postgres_user(
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-k",
                str(folder),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "shared_preload_libraries=pg_stat_statements",
                "-c",
                "pg_stat_statements.track=top",
                "-c",
                "max_connections=300",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    admin_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(admin_url, autocommit=True) as connection:
                    connection.execute("CREATE EXTENSION pg_stat_statements")
                    connection.execute("CREATE DATABASE sfumato")
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the benchmark's own PostgreSQL did not start") from None
                time.sleep(0.1)
        yield PrivatePostgres(
            f"postgresql+psycopg://postgres@127.0.0.1:{port}/sfumato", admin_url, server.pid
        )
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class PrivateRedis:
    url: str
    pid: int

    def reset(self) -> None:
        redis.Redis.from_url(self.url).config_resetstat()

    def commands(self) -> dict[str, int]:
        stats = redis.Redis.from_url(self.url).info("commandstats")
        # The counters are read, and reset, by this benchmark itself: those calls are not the
        # fleet's.
        own = {"info", "config|resetstat", "config"}
        return {
            name.removeprefix("cmdstat_"): int(values["calls"])
            for name, values in stats.items()
            if name.removeprefix("cmdstat_") not in own
        }

    def bytes_in_and_out(self) -> tuple[int, int]:
        stats = redis.Redis.from_url(self.url).info("stats")
        return int(stats["total_net_input_bytes"]), int(stats["total_net_output_bytes"])


@contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    port = free_port()
    server = subprocess.Popen(
        [
            *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the benchmark's own Redis did not start") from None
                time.sleep(0.05)
        yield PrivateRedis(url, server.pid)
    finally:
        server.terminate()
        server.wait(30)


@dataclass
class StoreTraffic:
    """Requests by method and bytes each way through the S3-protocol server."""

    requests: Counter[str] = field(default_factory=Counter)
    bytes_in: int = 0
    bytes_out: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.bytes_in = self.bytes_out = 0

    def snapshot(self) -> tuple[dict[str, int], int, int]:
        with self.lock:
            return dict(self.requests), self.bytes_in, self.bytes_out


class _CountingApp:
    """WSGI middleware: counts each request and the bytes of its body and its answer."""

    def __init__(self, app: Any, traffic: StoreTraffic) -> None:
        self.app = app
        self.traffic = traffic

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        with self.traffic.lock:
            self.traffic.requests[environ["REQUEST_METHOD"]] += 1
            self.traffic.bytes_in += length
        for chunk in self.app(environ, start_response):
            with self.traffic.lock:
                self.traffic.bytes_out += len(chunk)
            yield chunk


@contextmanager
def counted_s3() -> Iterator[tuple[str, StoreTraffic]]:
    """moto's S3 server behind a request counter; `SFUMATO_STORAGE_URL` for it, and the counts.
    moto comes with the dev extras (`pip install -e '.[dev]'`)."""
    import boto3
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            """Hundreds of requests a run: the counts are the record, not a line each."""

    traffic = StoreTraffic()
    app = _CountingApp(DomainDispatcherApplication(create_backend_app), traffic)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    saved = {name: os.environ.get(name) for name in AWS_ENV}
    os.environ.update(AWS_ENV)
    try:
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=BUCKET
        )
        yield f"s3://{BUCKET}?endpoint={endpoint}", traffic
    finally:
        server.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
