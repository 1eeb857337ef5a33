"""`job_cost`: the bill of one job in every part the fleet shares (PostgreSQL, Redis, the object
store) and in the gateway's CPU, measured for each kind of job."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CONFIG_FILE,
    ApiClient,
    Deployment,
    Options,
    service_view,
    wait_until_ready,
)
from benchmarks.measures import cpu_seconds
from benchmarks.report import Section, Table
from benchmarks.shared_parts import (
    AWS_ENV,
    PrivatePostgres,
    PrivateRedis,
    StoreTraffic,
    counted_s3,
    private_postgres,
    private_redis,
)
from benchmarks.testkit.processes import REPO, ChildProcess, running
from benchmarks.testkit.waits import free_port

SITES = REPO / "tests" / "fixtures" / "sites"
IDLE_SECONDS = 5.0
TOP_STATEMENTS = 15
TRANSACTION_ENDS = ("COMMIT", "ROLLBACK")
# kombu's Redis transport publishes a message with one LPUSH onto its queue's list.
BROKER_PUBLISH = ("lpush", "rpush")
METHOD = f"""
The distributed fleet on this machine, with parts of its own so that their counters hold nothing
else: a PostgreSQL cluster started for the run (`fsync` and `synchronous_commit` on, as in
production, `pg_stat_statements` loaded), a Redis server, an S3-protocol server (moto) behind a
counter of requests and bytes, one `sfumato serve --no-workers` gateway and one `sfumato worker`
per queue (image, video, style) with the builtin pipelines. Each kind of job runs N times, one
after another, each created with `POST`, waited for with long-polls (`wait=true`) and read once
more when done, as a client does. Before each kind the counters are reset; after it they are read
and divided by N. The fleet's background (heartbeats, the sweeper, Celery's broker polling) is
measured first over {IDLE_SECONDS:.0f} s with no job and subtracted at its rate over each kind's
wall time. Statements: `pg_stat_statements` calls in the service's database (top-level: what the
service sends, not the foreign-key checks they fire); transactions: its explicit COMMITs and
ROLLBACKs (a statement that commits by itself, such as the claim and the completion on PostgreSQL,
is a transaction too but is not counted there); WAL: `pg_current_wal_lsn()` before and after (the
whole cluster's, the background's share subtracted). Redis: `INFO commandstats` calls and
`total_net_input/output_bytes`; broker messages: the LPUSHes kombu publishes with. Store: requests
and bytes through the counter. Gateway CPU: its process's user+system time around the create,
around the long-polls, and around the one read after completion (the kernel counts it in 10 ms
ticks: a mean over N jobs).
"""


@dataclass(frozen=True)
class Operation:
    name: str
    path: str
    body: dict[str, Any]


@dataclass
class Bill:
    statements: dict[str, float]
    wal_bytes: float
    redis_commands: dict[str, float]
    redis_bytes: tuple[float, float]
    store_requests: dict[str, float]
    store_bytes: tuple[float, float]
    gateway_cpu: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def statement_count(self) -> float:
        return sum(
            calls
            for query, calls in self.statements.items()
            if query.upper() not in ("BEGIN", *TRANSACTION_ENDS)
        )

    @property
    def transactions(self) -> float:
        return sum(self.statements.get(end, 0.0) for end in TRANSACTION_ENDS) + sum(
            self.statements.get(end.lower(), 0.0) for end in TRANSACTION_ENDS
        )

    @property
    def broker_messages(self) -> float:
        return sum(self.redis_commands.get(name, 0.0) for name in BROKER_PUBLISH)


@dataclass
class Counters:
    postgres: PrivatePostgres
    redis: PrivateRedis
    store: StoreTraffic

    def reset(self) -> int:
        self.redis.reset()
        self.store.reset()
        return self.postgres.reset()

    def read(self, wal_start: int, runs: float) -> Bill:
        statements = self.postgres.statements("sfumato")
        wal = self.postgres.wal() - wal_start
        commands = self.redis.commands()
        redis_in, redis_out = self.redis.bytes_in_and_out()
        requests, store_in, store_out = self.store.snapshot()
        return Bill(
            {query: calls / runs for query, calls in statements.items()},
            wal / runs,
            {name: calls / runs for name, calls in commands.items()},
            (redis_in / runs, redis_out / runs),
            {method: count / runs for method, count in requests.items()},
            (store_in / runs, store_out / runs),
        )


def _minus(measured: Bill, background: Bill, seconds: float, runs: int) -> Bill:
    """The bill less the background's rate over `seconds`, shared by `runs` jobs."""
    share = seconds / runs

    def less(values: dict[str, float], idle: dict[str, float]) -> dict[str, float]:
        return {
            key: max(0.0, value - idle.get(key, 0.0) * share)
            for key, value in values.items()
            if value - idle.get(key, 0.0) * share > 0.05
        }

    return Bill(
        less(measured.statements, background.statements),
        max(0.0, measured.wal_bytes - background.wal_bytes * share),
        less(measured.redis_commands, background.redis_commands),
        (
            max(0.0, measured.redis_bytes[0] - background.redis_bytes[0] * share),
            max(0.0, measured.redis_bytes[1] - background.redis_bytes[1] * share),
        ),
        measured.store_requests,
        measured.store_bytes,
        measured.gateway_cpu,
    )


class _QuietSiteHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """The site's requests are not the benchmark's output."""


@contextmanager
def _site() -> Iterator[str]:
    handler = functools.partial(_QuietSiteHandler, directory=str(SITES))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class CostFleet:
    deployment: Deployment
    counters: Counters
    site: str


@contextmanager
def cost_fleet(work_dir: Path) -> Iterator[CostFleet]:
    work_dir.mkdir(parents=True)
    with ExitStack() as stack:
        postgres = stack.enter_context(private_postgres())
        broker = stack.enter_context(private_redis())
        storage_url, traffic = stack.enter_context(counted_s3())
        site = stack.enter_context(_site())
        env = {
            "SFUMATO_DATA_DIR": str(work_dir),
            "SFUMATO_CONFIG_FILE": str(CONFIG_FILE),
            "SFUMATO_DATABASE_URL": postgres.url,
            "SFUMATO_BROKER_URL": broker.url,
            "SFUMATO_STORAGE_URL": storage_url,
            "SFUMATO_NAMESPACE": f"bench-{uuid.uuid4().hex[:8]}",
            "SFUMATO_FETCH_ALLOW": "127.0.0.1",
            "SFUMATO_WAIT_SECONDS": "120",
            **AWS_ENV,
        }
        services = service_view(env)
        stack.callback(services.db.dispose)
        port = free_port()
        serve = ["serve", "--no-workers", "--port", str(port), "--log-level", "warning"]
        gateway = stack.enter_context(
            running(ChildProcess.sfumato(serve, env, work_dir / "serve.log"))
        )
        workers = [
            stack.enter_context(
                running(
                    ChildProcess.sfumato(
                        ["worker", "--queue", queue, "--concurrency", "1"],
                        env,
                        work_dir / f"worker-{queue}.log",
                    )
                )
            )
            for queue in ("image", "video", "style")
        ]
        wait_until_ready(gateway, port)
        for worker in workers:
            worker.wait_for_log(" ready.", 120)
        yield CostFleet(
            Deployment(gateway, port, services.db), Counters(postgres, broker, traffic), site
        )


async def _one_job(
    client: ApiClient, key: str, operation: Operation, gateway_pid: int
) -> tuple[str, float, float, float]:
    """Create, long-poll to the end, read once more; the job's id and the gateway's CPU seconds
    in each of the three."""
    before = cpu_seconds(gateway_pid)
    response = await client.call("POST", operation.path, key, operation.body)
    if response.status != 202:
        raise RuntimeError(f"{operation.name}: {response.status} {response.body[:300]!r}")
    job_id: str = response.json()["data"]["id"]
    created = cpu_seconds(gateway_pid)
    done = await client.wait_terminal(key, job_id)
    if done.json()["data"]["status"] != "completed":
        raise RuntimeError(f"{operation.name} did not complete: {done.body[:500]!r}")
    waited = cpu_seconds(gateway_pid)
    await client.call("GET", f"/jobs/{job_id}", key)
    read = cpu_seconds(gateway_pid)
    return job_id, created - before, waited - created, read - waited


async def _jobs(
    deployment: Deployment, key: str, operation: Operation, runs: int
) -> tuple[float, float, float]:
    """`runs` jobs one after another on one connection; the gateway's mean CPU seconds in the
    create, the long-polls and the read."""
    client = ApiClient(deployment.port)
    totals = [0.0, 0.0, 0.0]
    try:
        for _ in range(runs):
            _, *cpu = await _one_job(client, key, operation, deployment.gateway.pid)
            totals = [total + seconds for total, seconds in zip(totals, cpu, strict=True)]
    finally:
        client.close()
    return totals[0] / runs, totals[1] / runs, totals[2] / runs


def _measure(
    running_fleet: CostFleet, operation: Operation, runs: int, key: str
) -> tuple[Bill, float]:
    counters = running_fleet.counters
    wal_start = counters.reset()
    started = time.monotonic()
    cpu = asyncio.run(_jobs(running_fleet.deployment, key, operation, runs))
    seconds = time.monotonic() - started
    bill = counters.read(wal_start, runs)
    bill.gateway_cpu = cpu
    return bill, seconds


def _source_image(running_fleet: CostFleet, key: str) -> str:
    async def generated() -> str:
        client = ApiClient(running_fleet.deployment.port)
        try:
            job_id = await client.create_image(key, "a lighthouse at dusk")
            done = (await client.wait_terminal(key, job_id)).json()["data"]
        finally:
            client.close()
        image_id: str = done["result"]["images"][0]["id"]
        return image_id

    return asyncio.run(generated())


def operations(image_id: str, site: str) -> list[Operation]:
    return [
        Operation("generate, 1 image", "/images/generate", {"prompt": "a red barn in snow"}),
        Operation(
            "generate, 4 variations",
            "/images/generate",
            {"prompt": "a red barn in snow", "variations": 4},
        ),
        Operation(
            "image-to-video",
            "/videos/image-to-video",
            {"image": image_id, "prompt": "slow zoom", "duration": 2, "resolution": "480p"},
        ),
        Operation("style extraction", "/styles/extract", {"url": f"{site}/northwind/"}),
    ]


def _kib(value: float) -> str:
    return f"{value / 1024:.1f}"


def run(options: Options) -> Section:
    runs = options.scaled(5, 2)
    section = Section("job_cost", METHOD)
    bills: dict[str, Bill] = {}
    with cost_fleet(options.work_dir / "job-cost") as running_fleet:
        key = running_fleet.deployment.new_key()
        image_id = _source_image(running_fleet, key)
        wal_start = running_fleet.counters.reset()
        time.sleep(IDLE_SECONDS)
        background = running_fleet.counters.read(wal_start, IDLE_SECONDS)
        for operation in operations(image_id, running_fleet.site):
            measured, seconds = _measure(running_fleet, operation, runs, key)
            bills[operation.name] = _minus(measured, background, seconds, runs)
    table = Table(
        [
            "per job",
            "PG statements",
            "PG transactions",
            "WAL KiB",
            "Redis commands",
            "broker messages",
            "Redis KiB in/out",
            "store requests",
            "store KiB in/out",
            "gateway CPU ms create / long-polls / read",
        ]
    )
    for name, bill in bills.items():
        store = ", ".join(
            f"{count:.0f} {method}" for method, count in sorted(bill.store_requests.items())
        )
        table.add(
            name,
            f"{bill.statement_count:.0f}",
            f"{bill.transactions:.0f}",
            _kib(bill.wal_bytes),
            f"{sum(bill.redis_commands.values()):.0f}",
            f"{bill.broker_messages:.0f}",
            f"{_kib(bill.redis_bytes[0])} / {_kib(bill.redis_bytes[1])}",
            store or "0",
            f"{_kib(bill.store_bytes[0])} / {_kib(bill.store_bytes[1])}",
            " / ".join(f"{seconds * 1000:.1f}" for seconds in bill.gateway_cpu),
        )
    section.tables.append(table)
    first = bills["generate, 1 image"]
    statements = Table(["statement (one-image generate)", "calls per job"])
    ranked = Counter({query: calls for query, calls in first.statements.items()}).most_common(
        TOP_STATEMENTS
    )
    for query, calls in ranked:
        statements.add(f"`{query[:110]}`", f"{calls:.1f}")
    section.tables.append(statements)
    commands = Table(["Redis command (one-image generate)", "calls per job"])
    for name, calls in Counter(first.redis_commands).most_common(10):
        commands.add(name, f"{calls:.1f}")
    section.tables.append(commands)
    section.findings.append(
        f"With no job the fleet still makes {background.statement_count:.1f} PostgreSQL "
        f"statements, {sum(background.redis_commands.values()):.1f} Redis commands and "
        f"{_kib(background.wal_bytes)} KiB of WAL per second (subtracted above)."
    )
    return section
