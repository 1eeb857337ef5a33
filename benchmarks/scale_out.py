"""`scale_out`: the distributed spine with 1 to 16 worker processes and one or two gateways:
jobs per second, the time from create to start, and which process spends the machine's CPU at
each step, so the table shows where the curve bends and why."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass

from benchmarks.fleet import TRIVIAL_PIPELINES, Fleet, fleet
from benchmarks.harness import ApiClient, Deployment, Options
from benchmarks.measures import cpu_seconds, machine_busy_seconds, percentile, tree_cpu_seconds
from benchmarks.report import Section, Table, ms
from benchmarks.shared_parts import PrivatePostgres, PrivateRedis, private_postgres, private_redis

WORKER_STEPS = (1, 2, 4, 8, 16)
# With two gateways: the worker counts, walked down from the largest (stopping workers).
TWO_GATEWAY_STEPS = (16, 8, 4, 2, 1)
TWO_GATEWAY_STEPS_QUICK = (16, 8)
CLIENTS_PER_WORKER = 2
PARTS = ("PostgreSQL", "Redis", "workers", "gateways", "client", "others")
# The fleet's own parts: their CPU per job is what a change to the spine moves, whatever share
# of the machine other work left them.
FLEET_PARTS = ("PostgreSQL", "Redis", "workers", "gateways")
METHOD = f"""
The distributed fleet on this machine, with a PostgreSQL cluster and a Redis server of its own
(`fsync` and `synchronous_commit` on, as in production) so that their processes' CPU is the
fleet's alone; `sfumato serve --no-workers` gateways and `sfumato worker --queue image
--concurrency 1` processes; the generate pipeline is `TrivialGenerate` (an 8x8 image: what is
measured is the spine, as in `fleet`). Workers are added to one running fleet step by step ({
    ", ".join(map(str, WORKER_STEPS))
}); then a second gateway is started and the workers stopped step by
step. At each step {CLIENTS_PER_WORKER} clients per worker (each its own account and key, spread
over the gateways) run a closed loop: create a one-image job (`POST /v1/images/generate`),
long-poll it to its end (`wait=true`), create the next; after a warm-up, a measured window.
Jobs/s: the jobs whose `finished_at` falls in the window over its length. Create to start:
`started_at - created_at` (both written by the service) of the jobs created in the window; with
{CLIENTS_PER_WORKER} clients a worker it includes about one job's wait in the queue. CPU: each
part's user+system time over the window (`/proc/<pid>/stat`, a process with all its children:
PostgreSQL's postmaster and backends, redis-server, the workers, the gateways, this benchmark's
own client), as cores busy (1.00 = one core all the time); `others` is the rest of the machine's
busy time (`/proc/stat`): other work sharing the machine, outside the fleet. Fleet CPU per job:
the CPU seconds of PostgreSQL, Redis, the workers and the gateways over the jobs, the figure that
compares two versions of the code on a machine whose other work moves jobs/s from run to run.
"""


@dataclass(frozen=True)
class Step:
    gateways: int
    workers: int
    clients: int
    jobs: int
    rate: float
    waits: list[float]
    # Cores busy per part over the window, PARTS' order.
    cores: dict[str, float]


class CpuMeter:
    """CPU seconds so far of each part of the fleet, and of the machine."""

    def __init__(self, postgres: PrivatePostgres, broker: PrivateRedis, running: Fleet) -> None:
        self.postgres = postgres
        self.broker = broker
        self.running = running

    def read(self) -> dict[str, float]:
        parts = {
            "PostgreSQL": tree_cpu_seconds([self.postgres.pid]),
            "Redis": tree_cpu_seconds([self.broker.pid]),
            "workers": tree_cpu_seconds([worker.pid for worker in self.running.workers]),
            "gateways": tree_cpu_seconds(
                [deployment.gateway.pid for deployment in self.running.deployments]
            ),
            "client": cpu_seconds(os.getpid()),
        }
        parts["others"] = machine_busy_seconds() - sum(parts.values())
        return parts


def run(options: Options) -> Section:
    warm_up = options.scaled(3.0, 1.5)
    window = options.scaled(20.0, 6.0)
    section = Section("scale_out", METHOD)
    steps: list[Step] = []
    with ExitStack() as stack:
        postgres = stack.enter_context(private_postgres())
        broker = stack.enter_context(private_redis())
        running = stack.enter_context(
            fleet(options.work_dir / "scale-out", 1, 0, TRIVIAL_PIPELINES, postgres.url, broker.url)
        )
        meter = CpuMeter(postgres, broker, running)
        for count in WORKER_STEPS:
            running.add_workers(count - len(running.workers))
            steps.append(_step(running, meter, warm_up, window))
            print(_progress(steps[-1]), flush=True)
        running.add_gateway(running.deployments[0].db)
        for count in options.scaled(TWO_GATEWAY_STEPS, TWO_GATEWAY_STEPS_QUICK):
            running.stop_workers(len(running.workers) - count)
            steps.append(_step(running, meter, warm_up, window))
            print(_progress(steps[-1]), flush=True)
    section.tables.append(_table(steps))
    section.findings += _findings(steps)
    return section


def _progress(step: Step) -> str:
    return f"{step.gateways} gateway(s), {step.workers} worker(s): {step.rate:.0f} jobs/s"


def _step(running: Fleet, meter: CpuMeter, warm_up: float, window: float) -> Step:
    workers = len(running.workers)
    clients = CLIENTS_PER_WORKER * workers
    deployments = running.deployments
    keys = [deployments[0].new_key() for _ in range(clients)]
    job_ids, began, ended, cpu = asyncio.run(
        _closed_loop(deployments, keys, meter, warm_up, window)
    )
    times = deployments[0].job_times(job_ids)
    finished = [
        row
        for row in times.values()
        if row.finished_at is not None and began <= row.finished_at.timestamp() <= ended
    ]
    waits = sorted(
        (row.started_at - row.created_at).total_seconds()
        for row in times.values()
        if row.started_at is not None and began <= row.created_at.timestamp() <= ended
    )
    seconds = ended - began
    return Step(
        len(deployments),
        workers,
        clients,
        len(finished),
        len(finished) / seconds,
        waits,
        {part: spent / seconds for part, spent in cpu.items()},
    )


async def _closed_loop(
    deployments: Sequence[Deployment],
    keys: Sequence[str],
    meter: CpuMeter,
    warm_up: float,
    window: float,
) -> tuple[list[str], float, float, dict[str, float]]:
    """Every job's id, the window's start and end (Unix time), and each part's CPU seconds in
    the window."""
    stop_at = time.monotonic() + warm_up + window
    job_ids: list[str] = []

    async def client_loop(deployment: Deployment, key: str) -> None:
        client = ApiClient(deployment.port)
        try:
            while time.monotonic() < stop_at:
                job_id = await client.create_image(key, "scale out")
                job_ids.append(job_id)
                await client.wait_terminal(key, job_id)
        finally:
            client.close()

    async def measure() -> tuple[float, float, dict[str, float]]:
        await asyncio.sleep(warm_up)
        before, began = meter.read(), time.time()
        await asyncio.sleep(window)
        after, ended = meter.read(), time.time()
        return began, ended, {part: after[part] - before[part] for part in PARTS}

    measured = asyncio.create_task(measure())
    await asyncio.gather(
        *(client_loop(deployments[index % len(deployments)], key) for index, key in enumerate(keys))
    )
    began, ended, cpu = await measured
    return job_ids, began, ended, cpu


def _table(steps: Sequence[Step]) -> Table:
    table = Table(
        [
            "gateways",
            "workers",
            "clients",
            "jobs",
            "jobs/s",
            "vs 1 worker",
            "create to start p50",
            "p99",
            *(f"CPU {part}" for part in PARTS),
            "fleet CPU per job",
        ]
    )
    single = steps[0].rate
    for step in steps:
        table.add(
            step.gateways,
            step.workers,
            step.clients,
            step.jobs,
            f"{step.rate:.0f}",
            f"{step.rate / single:.2f}x",
            ms(percentile(step.waits, 0.50)),
            ms(percentile(step.waits, 0.99)),
            *(f"{step.cores[part]:.2f}" for part in PARTS),
            ms(sum(step.cores[part] for part in FLEET_PARTS) / step.rate),
        )
    return table


def _findings(steps: Sequence[Step]) -> list[str]:
    cores = os.cpu_count() or 1
    one_gateway = [step for step in steps if step.gateways == 1]
    best = max(one_gateway, key=lambda step: step.rate)
    bend = next(
        (
            later
            for earlier, later in itertools.pairwise(one_gateway)
            if later.rate < earlier.rate * 1.1
        ),
        None,
    )
    fleet_cores = {part: best.cores[part] for part in (*FLEET_PARTS, "client")}
    heaviest = max(fleet_cores, key=fleet_cores.__getitem__)
    busy = sum(best.cores.values())
    findings = [
        f"Best with one gateway: {best.rate:.0f} jobs/s at {best.workers} workers; "
        + (
            f"the curve bends at {bend.workers} workers (less than 10% more than the step before). "
            if bend
            else "the curve had not bent by the last step. "
        )
        + f"At the best step the machine's {cores} cores were {busy:.2f} cores busy "
        f"({busy / cores * 100:.0f}%), the most of it in {heaviest} "
        f"({fleet_cores[heaviest]:.2f} cores); PostgreSQL {best.cores['PostgreSQL']:.2f}, "
        f"Redis {best.cores['Redis']:.2f}.",
        f"This machine has {cores} cores shared by PostgreSQL, Redis, the gateways, the workers "
        "and the client: once they are all busy, more worker processes only share them, so the "
        "curve here shows where this machine's cores run out, not where the fleet's shared "
        "parts would on machines of their own. What carries over is each part's CPU per job "
        "(its cores over jobs/s): PostgreSQL's and Redis's are what one primary and one Redis "
        "pay per job at any scale.",
    ]
    per_job = ", ".join(
        f"{part} {best.cores[part] / best.rate * 1000:.2f} ms" for part in FLEET_PARTS
    )
    findings.append(f"CPU per job at the best step: {per_job}.")
    return findings
