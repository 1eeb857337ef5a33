"""`chaos`: a soak under load with faults injected at random, then invariants checked over the
whole history (issue 19). `python -m benchmarks chaos [--minutes N]` (default 5).

Distributed mode on this machine: two gateways, two image workers, a video and a style worker,
PostgreSQL (a temporary database, reached through a TCP proxy that can cut it), a Redis server
of the soak's own (restartable; the shared ones are never touched) and moto's S3 server (behind
a second proxy, so the store can go away without losing what it holds). The load runs in its
own process (`benchmarks/chaos_load.py`) and writes every request to a history file.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import boto3
import httpx
from sqlalchemy import select

from benchmarks.harness import (
    Child,
    Options,
    free_port,
    service_view,
    temporary_postgres_database,
)
from benchmarks.measures import percentile
from benchmarks.report import Section, Table
from core.accounts import api_keys
from core.accounts import service as accounts
from core.services import Services
from core.tables import Account, CreditEntry, JobRow, Media, Style, Upload
from core.uploads.service import ABANDONED_AFTER, possible_final_keys
from tests.support.outages import DiskUnavailable, RedisServer, SmallDisk, TcpProxy
from tests.support.service import TEST_PIPELINES
from tests.support.styles import site_server

BUCKET = "sfumato-chaos"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "sfumato-chaos",
    "AWS_SECRET_ACCESS_KEY": "sfumato-chaos-secret",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_DEFAULT_REGION": "us-east-1",
}
WAIT_SECONDS = 10.0
DRAIN_SECONDS = 600
LEASE_SECONDS = 6
# A held long-poll answers within its hold plus this (a slow machine, a re-read after waking).
LONG_POLL_SLACK_SECONDS = 5.0
FAULT_KINDS = (
    "worker SIGKILL mid-job",
    "worker SIGTERM",
    "gateway SIGKILL",
    "Redis restart",
    "PostgreSQL cut",
    "object store cut",
    "full disk",
)
# The workers' scratch folder (`TMPDIR`: a video is written there before it is stored) on a
# tmpfs of its own, which the "full disk" fault fills. The store is S3, so that is the local
# disk the soak's jobs write to.
SCRATCH_BYTES = 64 << 20
# Accounts: two that never run out, two whose balances run out during the soak.
BALANCES = (100_000, 100_000, 60, 120)
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
INVARIANTS = (
    "every accepted create (202) reached a terminal state",
    "no job completed twice with different results",
    "no Idempotency-Key made two jobs",
    "balance = grants - settled charges, per account",
    "each job charged at most once, refunded in full when it failed",
    "no long-poll held past its bound",
    "no orphan object in storage",
    "every failed job carries GENERATION_FAILED and a message",
)
METHOD = f"""
Distributed mode on this machine: two `sfumato serve --no-workers` gateways, two image workers,
one video and one style worker (`sfumato worker`), PostgreSQL (a temporary database reached
through a TCP proxy the soak can cut), a `redis-server` of the soak's own (restarted as a fault;
the shared Redis is never touched) and moto's S3 server as the object store (behind a second TCP
proxy). Pipelines: the test ones (`[sleep S]` prompts, `[fail]`), builtin edit and video, style
extraction of the fixture sites as text (Chromium off, to spare the two cores). Lease
{LEASE_SECONDS} s, sweep every second, long-poll hold {WAIT_SECONDS:.0f} s.

The load runs in a process of its own: {2 * len(BALANCES)} simulated users on {len(BALANCES)}
accounts (two of which run out of credits) send generates (40% with an `Idempotency-Key`, half of
those retried on purpose), edits, uploads (presign, PUT to the store, complete, some used as a
reference), image-to-video, style extractions, cancels, long-polls, reads and list reads to a random
gateway among the ready ones, as a load balancer with readiness probes routes (`/readyz` checked
every half second; any gateway when none is ready); a request whose gateway is gone is sent again
through the other one when that is safe (reads, keyed creates). The load starts once both gateways
are ready. Faults at random times (every 6-14 s), each logged: SIGKILL of a worker while jobs run,
SIGTERM of a worker (a replacement starts at once), SIGKILL of a gateway (restarted 2 s later); a
gateway or worker that exits by itself is started again, as Kubernetes restarts a pod (one started
during a PostgreSQL cut cannot prepare its database), a Redis restart (its queued messages are
lost), the PostgreSQL proxy cut for 2-4 s, the object store's proxy cut for 2-4 s, a full disk for
2-4 s. The store is S3, so the local disk the jobs write to is the workers' scratch folder
(`TMPDIR`, where a video is written before it is stored): it is a {SCRATCH_BYTES >> 20} MiB tmpfs of
its own, filled to its last page by the fault. Mounting one needs root (CAP_SYS_ADMIN); where the
soak runs without, the fault is logged as skipped, with the reason. Then the faults stop, the jobs
drain, and every invariant is checked over the whole history (the load's log of every answer, the
database, the bucket's listing).
"""


@dataclass
class Fault:
    at: float
    kind: str
    detail: str


@dataclass
class Outcome:
    minutes: float
    faults: list[Fault]
    requests: Counter[str]
    jobs: Counter[str]
    latencies: list[float]
    violations: dict[str, list[str]]
    accepted: int

    @property
    def violation_count(self) -> int:
        return sum(len(found) for found in self.violations.values())

    def summary(self) -> str:
        return (
            f"chaos: {len(self.faults)} faults, {sum(self.jobs.values())} jobs, "
            f"{self.violation_count} invariant violations"
        )


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
    gateways: dict[int, Child] = field(default_factory=dict)
    workers: list[tuple[str, Child]] = field(default_factory=list)
    retired: list[Child] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start_gateway(self, port: int) -> None:
        args = ["-m", "sfumato", "serve", "--no-workers", "--port", str(port)]
        log = self.folder / f"gateway-{port}.log"
        self.gateways[port] = Child([*args, "--log-level", "warning"], self.env, log).start()

    def start_worker(self, queue: str) -> Child:
        index = len(self.workers) + len(self.retired)
        args = ["-m", "sfumato", "worker", "--queue", queue]
        env = {**self.env, "TMPDIR": str(self.scratch.path)} if self.scratch else self.env
        child = Child(args, env, self.folder / f"worker-{queue}-{index}.log").start()
        with self.lock:
            self.workers.append((queue, child))
        return child

    def replace_worker(self, queue: str, child: Child) -> None:
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


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout}s: {what}")
        time.sleep(0.2)


def _ready(worker: Child) -> bool:
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
    log = (folder / "moto.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=log,
        env={**os.environ, **AWS_ENV},
    )
    try:
        _wait_for(lambda: _answers(f"http://127.0.0.1:{port}/moto-api/"), 60, "moto up")
        _s3(port).create_bucket(Bucket=BUCKET)
        yield port
    finally:
        process.terminate()
        process.wait(20)


def _s3(port: int) -> Any:
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
            "SFUMATO_PIPELINES": TEST_PIPELINES,
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
        # Ready: a gateway's sentence model loads after it starts answering (chaos_load.py),
        # which takes minutes on a busy 2-core machine.
        for port in running.gateways:
            _wait_for(lambda p=port: _answers(f"http://127.0.0.1:{p}/readyz"), 480, "gateway")
        for _, worker in running.workers:
            _wait_for(lambda w=worker: _ready(w), 300, "worker")
        yield running


class Faults:
    """Injects faults at random times until stopped; each one logged with its time."""

    def __init__(self, running: Cluster, started: float, interval: tuple[float, float]) -> None:
        self.cluster = running
        self.started = started
        self.interval = interval
        self.log: list[Fault] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)

    def __enter__(self) -> Faults:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _note(self, kind: str, detail: str) -> None:
        fault = Fault(round(time.monotonic() - self.started, 1), kind, detail)
        self.log.append(fault)
        print(f"  fault at {fault.at:6.1f}s: {kind} ({detail})", flush=True)

    def _run(self) -> None:
        kinds = list(FAULT_KINDS)
        random.shuffle(kinds)
        while not self._stop.wait(random.uniform(*self.interval)):
            self.cluster.restart_exited()
            # Every kind once before any repeats, then at random.
            kind = kinds.pop() if kinds else random.choice(FAULT_KINDS)
            try:
                self.inject(kind)
            except Exception as error:
                self._note(kind, f"could not inject: {error!r}")

    def _processing(self, queue: str) -> int:
        with self.cluster.services.db.read() as session:
            rows = session.scalars(
                select(JobRow.id).where(JobRow.status == "processing", JobRow.queue == queue)
            ).all()
        return len(rows)

    def inject(self, kind: str) -> None:
        running = self.cluster
        if kind in ("worker SIGKILL mid-job", "worker SIGTERM"):
            queue = random.choice(["image", "image", "image", "video", "style"])
            # Mid-job: wait (a little) for a job of that queue to be running.
            deadline = time.monotonic() + 5
            while self._processing(queue) == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            busy = self._processing(queue)
            # Only a worker that is up: on a busy machine a replacement takes minutes to start,
            # and killing starting workers would only leave a queue without any.
            with running.lock:
                candidates = [(q, c) for q, c in running.workers if q == queue and _ready(c)]
            if not candidates:
                self._note(kind, f"skipped: no {queue} worker is up yet")
                return
            target_queue, child = random.choice(candidates)
            sig = signal.SIGKILL if "SIGKILL" in kind else signal.SIGTERM
            os.kill(child.pid, sig)
            running.replace_worker(target_queue, child)
            self._note(kind, f"{queue} worker pid {child.pid}, {busy} {queue} jobs processing")
        elif kind == "gateway SIGKILL":
            port = random.choice(list(running.gateways))
            os.kill(running.gateways[port].pid, signal.SIGKILL)
            self._note(kind, f"gateway on port {port}, restarted 2 s later")
            time.sleep(2)
            running.gateways[port].popen.wait()  # type: ignore[union-attr]
            running.start_gateway(port)
        elif kind == "Redis restart":
            running.redis.kill()
            self._note(kind, "killed (its queued messages lost), started again 1 s later")
            time.sleep(1)
            running.redis.start()
        elif kind == "full disk":
            if running.scratch is None:
                self._note(kind, f"skipped: {running.scratch_unavailable}")
                return
            seconds = random.uniform(2, 4)
            running.scratch.fill()
            self._note(kind, f"the workers' scratch disk full for {seconds:.1f} s")
            time.sleep(seconds)
            running.scratch.free()
        else:
            proxy = running.postgres if kind == "PostgreSQL cut" else running.storage
            seconds = random.uniform(2, 4)
            proxy.cut()
            self._note(kind, f"{seconds:.1f} s")
            time.sleep(seconds)
            proxy.restore()


def soak(minutes: float, folder: Path) -> Outcome:
    """Run the soak for `minutes` of load, drain, and check every invariant."""
    interval = (6.0, 14.0) if minutes >= 3 else (4.0, 8.0)
    with cluster(folder) as running, site_server() as site:
        keys = []
        for credits in BALANCES:
            email = f"chaos-{uuid.uuid4().hex[:10]}@chaos.local"
            accounts.create_account(running.services.db, email, "pro", credits)
            keys.append(api_keys.create_key(running.services.db, email, "chaos", None).plaintext)
        history = folder / "history.jsonl"
        plan = {
            "gateways": [f"http://127.0.0.1:{port}/v1" for port in running.gateways],
            "keys": keys,
            "seconds": minutes * 60,
            "site": site,
            "wait_seconds": WAIT_SECONDS,
            "history": str(history),
        }
        plan_file = folder / "plan.json"
        plan_file.write_text(json.dumps(plan))
        load = Child(
            ["-m", "benchmarks.chaos_load", str(plan_file)], {}, folder / "load.log"
        ).start()
        started = time.monotonic()
        with Faults(running, started, interval) as faults:
            assert load.popen is not None
            load.popen.wait(minutes * 60 + 300)
        if load.popen.returncode != 0:
            raise RuntimeError(f"the load exited with {load.popen.returncode} (see load.log)")
        print("  load done, faults stopped; draining", flush=True)
        events = [json.loads(line) for line in history.read_text().splitlines() if line]
        accepted = _accepted(events)
        _drain(running, timeout=DRAIN_SECONDS)
        return _check(running, events, accepted, faults.log, minutes)


def _accepted(events: list[dict[str, Any]]) -> set[str]:
    creates = {"generate", "edit", "video", "extract"}
    return {
        event["job"]
        for event in events
        if event["kind"] in creates and event["outcome"] == "202" and "job" in event
    }


def _drain(running: Cluster, timeout: float) -> None:
    """Until no job is pending or processing (replacement workers may still be starting: on a
    busy machine that takes minutes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with running.services.db.read() as session:
            open_jobs = session.scalars(
                select(JobRow.id).where(JobRow.status.in_(("pending", "processing")))
            ).all()
        if not open_jobs:
            return
        running.restart_exited()
        time.sleep(1)


def _check(
    running: Cluster,
    events: list[dict[str, Any]],
    accepted: set[str],
    faults: list[Fault],
    minutes: float,
) -> Outcome:
    violations: dict[str, list[str]] = {name: [] for name in INVARIANTS}
    with running.services.db.read() as session:
        jobs = {job.id: job for job in session.scalars(select(JobRow))}
        ledger = list(session.scalars(select(CreditEntry)))
        media_keys = set(session.scalars(select(Media.storage_key)))
        staging_keys = set(session.scalars(select(Upload.staging_key)))
        # What a complete interrupted by a PostgreSQL cut stored: purged with its upload.
        staging_keys |= {
            key
            for upload_id in session.scalars(select(Upload.id).where(Upload.completed_at.is_(None)))
            for key in possible_final_keys(upload_id)
        }
        logo_keys = set(session.scalars(select(Style.logo_key)))
        balances = {
            account.id: account.credit_balance for account in session.scalars(select(Account))
        }
    # 1. Every accepted create reached a terminal state.
    for job_id in sorted(accepted):
        job = jobs.get(job_id)
        if job is None or job.status not in ("completed", "failed"):
            state = "missing" if job is None else job.status
            violations[INVARIANTS[0]].append(f"{job_id} is {state}")
    # 2. One result per job: every terminal answer of a job agrees, and with the database.
    seen: dict[str, set[str]] = defaultdict(set)
    for event in events:
        if event.get("status") in ("completed", "failed") and "job" in event:
            seen[event["job"]].add(json.dumps([event["status"], event.get("result")]))
    for job_id, answers in seen.items():
        job = jobs.get(job_id)
        if job is not None and job.status in ("completed", "failed"):
            answers = answers | {json.dumps([job.status, _fingerprint(job)])}
        if len(answers) > 1:
            violations[INVARIANTS[1]].append(f"{job_id}: {sorted(answers)}")
    # 3. One job per Idempotency-Key.
    by_key: dict[str, set[str]] = defaultdict(set)
    for event in events:
        if event.get("idem") and event["outcome"] == "202" and "job" in event:
            by_key[event["idem"]].add(event["job"])
    for key, made in by_key.items():
        if len(made) > 1:
            violations[INVARIANTS[2]].append(f"{key}: {sorted(made)}")
    # 4, 5. The ledger: balances, and each job's movements.
    per_job: dict[str, list[CreditEntry]] = defaultdict(list)
    grants: Counter[str] = Counter()
    charged: Counter[str] = Counter()
    for entry in ledger:
        if entry.job_id is None:
            grants[entry.account_id] += entry.amount
        else:
            per_job[entry.job_id].append(entry)
    for job_id, job in jobs.items():
        entries = per_job.get(job_id, [])
        kinds = Counter(entry.kind for entry in entries)
        net = -sum(entry.amount for entry in entries)
        charged[job.account_id] += net
        problem = None
        if kinds["reserve"] > 1 or kinds["settle"] > 1 or kinds["refund"] > 1:
            problem = f"movements {dict(kinds)}"
        elif job.status == "completed" and (kinds["settle"] != 1 or net != job.credits_reserved):
            problem = f"completed, charged {net} of {job.credits_reserved}, {dict(kinds)}"
        elif job.status == "failed" and (net != 0 or kinds["settle"]):
            why = (job.error or {}).get("message")
            # CONTRACT.md: cancelling a processing job keeps (settles) 1 credit.
            if not (why == "Job cancelled" and net == 1 and kinds["settle"] == 1):
                problem = f"failed ({why}), charged {net}, {dict(kinds)}"
        if problem:
            violations[INVARIANTS[4]].append(f"{job_id}: {problem}")
    for account_id, balance in balances.items():
        expected = grants[account_id] - charged[account_id]
        if balance != expected:
            violations[INVARIANTS[3]].append(f"{account_id}: {balance}, expected {expected}")
    # 6. Long-polls answered within their bound.
    bound = WAIT_SECONDS + LONG_POLL_SLACK_SECONDS
    for event in events:
        if event["kind"] == "long_poll" and (
            event["outcome"] == "client-timeout" or event.get("took", 0) > bound
        ):
            violations[INVARIANTS[5]].append(
                f"ended at {event['t']}s, took {event.get('took')} s on gateway "
                f"{event.get('gateway')}: {event['outcome']}"
            )
    # 7. No object the database does not know of (outputs have no purge period: a leaked one
    # stays forever; staged uploads, and what an interrupted complete stored, are known to the
    # database until their purge).
    known = media_keys | staging_keys | logo_keys
    cutoff = datetime.now(UTC) - ABANDONED_AFTER
    listing = _s3(running.storage.target[1]).get_paginator("list_objects_v2")
    for page in listing.paginate(Bucket=BUCKET):
        for item in page.get("Contents", []):
            if item["Key"] not in known or item["LastModified"] < cutoff:
                violations[INVARIANTS[6]].append(item["Key"])
    # 8. Failed jobs say why: in the database, and in every failed answer the load was given.
    failed_answers = [
        (event["job"], event.get("error"))
        for event in events
        if event.get("status") == "failed" and "job" in event
    ]
    failed_answers += [(job.id, job.error) for job in jobs.values() if job.status == "failed"]
    for job_id, error in failed_answers:
        if not error or error.get("code") != "GENERATION_FAILED" or not error.get("message"):
            violations[INVARIANTS[7]].append(f"{job_id}: {error}")
    latencies = sorted(
        (job.finished_at - job.created_at).total_seconds()
        for job in jobs.values()
        if job.status == "completed" and job.finished_at is not None
    )
    return Outcome(
        minutes=minutes,
        faults=faults,
        requests=Counter(f"{event['kind']}: {event['outcome']}" for event in events),
        jobs=Counter(f"{job.type} {job.status}" for job in jobs.values()),
        latencies=latencies,
        violations=violations,
        accepted=len(accepted),
    )


def _fingerprint(job: JobRow) -> Any:
    """The result as the load fingerprints it (benchmarks/chaos_load.py)."""
    result = job.result
    if job.status != "completed" or result is None:
        return None
    if "images" in result:
        return sorted(image["id"] for image in result["images"])
    if "video" in result:
        return result["video"]["id"]
    return result.get("style", {}).get("id")


def section(outcome: Outcome) -> Section:
    result = Section("chaos", METHOD)
    faults = Table(["fault", "injected"])
    for kind in FAULT_KINDS:
        faults.add(kind, sum(1 for fault in outcome.faults if fault.kind == kind))
    result.tables.append(faults)
    timeline = Table(["at (s)", "fault", "detail"])
    for fault in outcome.faults:
        timeline.add(f"{fault.at:.1f}", fault.kind, fault.detail)
    result.tables.append(timeline)
    requests = Table(["request: outcome", "count"])
    for name, count in sorted(outcome.requests.items()):
        requests.add(name, count)
    result.tables.append(requests)
    jobs = Table(["job type and final state", "count"])
    for name, count in sorted(outcome.jobs.items()):
        jobs.add(name, count)
    result.tables.append(jobs)
    latency = Table(["completed jobs", "p50 created to finished", "p99"])
    if outcome.latencies:
        latency.add(
            len(outcome.latencies),
            f"{percentile(outcome.latencies, 0.5):.2f} s",
            f"{percentile(outcome.latencies, 0.99):.2f} s",
        )
    result.tables.append(latency)
    invariants = Table(["invariant", "violations"])
    for name, found in outcome.violations.items():
        invariants.add(name, len(found))
    result.tables.append(invariants)
    result.findings.append(
        f"{outcome.minutes:g} minutes of load; {outcome.accepted} creates accepted (202). "
        f"{outcome.summary()}."
    )
    for name, found in outcome.violations.items():
        for example in found[:5]:
            result.findings.append(f"Violation of \u201c{name}\u201d: {example}")
    return result


def run(options: Options) -> Section:
    minutes = options.minutes if options.minutes is not None else options.scaled(5.0, 1.0)
    outcome = soak(minutes, options.work_dir / "chaos")
    built = section(outcome)
    built.last_line = outcome.summary()
    return built
