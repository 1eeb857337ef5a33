"""The soak's deployment: gateways and workers as processes, PostgreSQL and the object
store behind proxies the faults cut, a Redis server of its own, the workers' small scratch disk."""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import boto3
import httpx

from benchmarks.harness import service_view, temporary_postgres_database
from benchmarks.testkit.outages import DiskUnavailable, RedisServer, SmallDisk, TcpProxy
from benchmarks.testkit.pipelines import STEERABLE_PIPELINES
from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.waits import free_port, wait_until
from core.services import Services

BUCKET = "sfumato-chaos"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "sfumato-chaos",
    "AWS_SECRET_ACCESS_KEY": "sfumato-chaos-secret",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_DEFAULT_REGION": "us-east-1",
}
WAIT_SECONDS = 10.0
LEASE_SECONDS = 6
# The workers' scratch folder (`TMPDIR`: a video is written there before it is stored) on a
# tmpfs of its own, which the "full disk" fault fills. The store is S3, so that is the local
# disk the soak's jobs write to.
SCRATCH_BYTES = 64 << 20
CONFIG = """
[rate_limits]
image = "100000/minute"
video = "100000/minute"
style = "100000/minute"
upload = "100000/minute"
default = "100000/minute"

[plans.pro]
max_inflight_images = 1000
max_inflight_videos = 100
daily_generation_cap = 0

[queues.image]
shutdown_grace_seconds = 3

[queues.video]
shutdown_grace_seconds = 3

[queues.style]
shutdown_grace_seconds = 3
"""


@dataclass
class Cluster:
    env: dict[str, str]
    folder: Path
    services: Services
    redis: RedisServer
    postgres: TcpProxy
    storage: TcpProxy
    # None where no small disk can be mounted here: why, in `scratch_unavailable`.
    scratch: SmallDisk | None
    scratch_unavailable: str
    gateways: dict[int, ChildProcess] = field(default_factory=dict)
    workers: list[tuple[str, ChildProcess]] = field(default_factory=list)
    retired: list[ChildProcess] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start_gateway(self, port: int) -> None:
        args = ["serve", "--no-workers", "--port", str(port), "--log-level", "warning"]
        log = self.folder / f"gateway-{port}.log"
        self.gateways[port] = ChildProcess.sfumato(args, self.env, log).start()

    def start_worker(self, queue: str) -> ChildProcess:
        index = len(self.workers) + len(self.retired)
        args = ["worker", "--queue", queue]
        env = {**self.env, "TMPDIR": str(self.scratch.path)} if self.scratch else self.env
        child = ChildProcess.sfumato(args, env, self.folder / f"worker-{queue}-{index}.log").start()
        with self.lock:
            self.workers.append((queue, child))
        return child

    def replace_worker(self, queue: str, child: ChildProcess) -> None:
        with self.lock:
            self.workers.remove((queue, child))
            self.retired.append(child)
        self.start_worker(queue)

    def restart_exited(self) -> None:
        """As Kubernetes restarts a pod whose process exited: a gateway or a worker started
        while PostgreSQL was cut cannot prepare its database and exits. (The faults' own
        kills are replaced by the faults.)"""
        for port, child in list(self.gateways.items()):
            if child.popen is not None and child.popen.poll() is not None:
                print(f"  gateway on port {port} exited ({child.popen.returncode}); restarted")
                self.start_gateway(port)
        with self.lock:
            exited = [
                (queue, child, child.popen.returncode)
                for queue, child in self.workers
                if child.popen is not None and child.popen.poll() is not None
            ]
        for queue, child, code in exited:
            print(f"  {queue} worker pid {child.pid} exited ({code}); replaced")
            self.replace_worker(queue, child)

    def stop(self) -> None:
        for child in [*self.gateways.values(), *(c for _, c in self.workers), *self.retired]:
            child.stop()


def worker_ready(worker: ChildProcess) -> bool:
    return " ready." in worker.log.read_text(errors="replace")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def _moto(folder: Path) -> Iterator[int]:
    """moto's S3 server in a process of its own, with the bucket made."""
    port = free_port()
    server = ChildProcess(
        ["-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], AWS_ENV, folder / "moto.log"
    ).start()
    try:
        server.wait_for(lambda: _answers(f"http://127.0.0.1:{port}/moto-api/"), 60, "moto up")
        s3_client(port).create_bucket(Bucket=BUCKET)
        yield port
    finally:
        server.stop()


def s3_client(port: int) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id=AWS_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    )


@contextmanager
def cluster(folder: Path) -> Iterator[Cluster]:
    """The whole deployment, ready, on a temporary PostgreSQL database of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        database = stack.enter_context(temporary_postgres_database())
        target = urlsplit(database)
        postgres = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
        stack.callback(postgres.close)
        proxied = urlunsplit(target._replace(netloc=f"{target.username}@127.0.0.1:{postgres.port}"))
        redis_server = RedisServer(folder)
        redis_server.start()
        stack.callback(redis_server.kill)
        moto_port = stack.enter_context(_moto(folder))
        storage = TcpProxy("127.0.0.1", moto_port)
        stack.callback(storage.close)
        disk = SmallDisk(folder / "scratch", SCRATCH_BYTES)
        scratch: SmallDisk | None = disk
        scratch_unavailable = ""
        try:
            disk.mount()
            stack.callback(disk.unmount)
        except DiskUnavailable as reason:
            scratch, scratch_unavailable = None, str(reason)
        config = folder / "chaos.toml"
        config.write_text(CONFIG)
        env = {
            **AWS_ENV,
            "SFUMATO_DATA_DIR": str(folder),
            "SFUMATO_DATABASE_URL": proxied,
            "SFUMATO_BROKER_URL": redis_server.url,
            "SFUMATO_STORAGE_URL": f"s3://{BUCKET}?endpoint=http://127.0.0.1:{storage.port}",
            "SFUMATO_NAMESPACE": f"chaos-{uuid.uuid4().hex[:8]}",
            "SFUMATO_SECRET_KEY": secrets.token_hex(32),
            "SFUMATO_PIPELINES": STEERABLE_PIPELINES,
            "SFUMATO_CONFIG_FILE": str(config),
            "SFUMATO_LEASE_SECONDS": str(LEASE_SECONDS),
            "SFUMATO_SWEEP_INTERVAL_SECONDS": "1",
            "SFUMATO_DISPATCH_GRACE_SECONDS": "2",
            "SFUMATO_REPUBLISH_AFTER_SECONDS": "10",
            "SFUMATO_WAIT_SECONDS": str(WAIT_SECONDS),
            "SFUMATO_FETCH_ALLOW": "127.0.0.1",
            "SFUMATO_CHROMIUM": "off",
        }
        # The soak's own view goes straight to PostgreSQL, not through the proxy it cuts.
        services = service_view({**env, "SFUMATO_DATABASE_URL": database})
        stack.callback(services.db.dispose)
        running = Cluster(
            env, folder, services, redis_server, postgres, storage, scratch, scratch_unavailable
        )
        stack.callback(running.stop)
        for _ in range(2):
            running.start_gateway(free_port())
        for queue in ("image", "image", "video", "style"):
            running.start_worker(queue)
        # Ready: a gateway's sentence model loads after it starts answering (chaos/load.py),
        # which takes minutes on a busy 2-core machine.
        for port in running.gateways:
            wait_until(lambda p=port: _answers(f"http://127.0.0.1:{p}/readyz"), 480, "gateway", 0.2)
        for _, worker in running.workers:
            wait_until(lambda w=worker: worker_ready(w), 300, "worker", 0.2)
        yield running
