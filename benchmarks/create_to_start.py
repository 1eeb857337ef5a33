"""`create_to_start`: how long a job waits between its creation and an idle worker starting it."""

from __future__ import annotations

import asyncio

from benchmarks.harness import MODES, ApiClient, Deployment, Options, deployment
from benchmarks.measures import percentile
from benchmarks.report import Section, Table, ms, verdict

GOAL_P50_SECONDS = 0.020
WARMUP_JOBS = 5
# Between one job's end and the next create, so that every job finds its worker idle.
IDLE_PAUSE_SECONDS = 0.05
METHOD = f"""
Jobs (`[sleep 0]`, instant) created one at a time through `POST /v1/images/generate`, each
followed by a long-poll until it completes and a {IDLE_PAUSE_SECONDS * 1000:.0f} ms pause, so
every job finds its worker idle. The latency is the job row's `started_at` (set by the worker's
claim) minus its `created_at` (set by the gateway's insert), both read from the database
afterwards; it spans the insert's commit, publishing to the broker, delivery to the worker and
the claim. Embedded: `sfumato serve` with its workers in the process, SQLite and the in-memory
broker. Distributed: `sfumato serve --no-workers`, one `sfumato worker --queue image` process,
PostgreSQL and Redis. {WARMUP_JOBS} warm-up jobs first are not counted. Goal: p50 under
{GOAL_P50_SECONDS * 1000:.0f} ms.
"""


def run(options: Options) -> Section:
    jobs = options.scaled(100, 20)
    section = Section("create_to_start", METHOD)
    table = Table(["mode", "jobs", "p50", "p99", "max"])
    for mode in MODES:
        with deployment(mode, options.work_dir / f"create_to_start-{mode}") as service:
            job_ids = asyncio.run(_sequential_jobs(service, jobs))
            times = service.job_times(job_ids)
        waits = sorted(
            (row.started_at - row.created_at).total_seconds()
            for row in times.values()
            if row.started_at is not None
        )
        if len(waits) != jobs:
            raise RuntimeError(f"{mode}: {jobs - len(waits)} jobs have no started_at")
        p50 = percentile(waits, 0.50)
        table.add(mode, jobs, ms(p50), ms(percentile(waits, 0.99)), ms(waits[-1]))
        section.findings.append(
            f"{mode}: p50 {ms(p50)}, goal under {GOAL_P50_SECONDS * 1000:.0f} ms "
            f"{verdict(p50 < GOAL_P50_SECONDS)}."
        )
    section.tables.append(table)
    return section


async def _sequential_jobs(service: Deployment, jobs: int) -> list[str]:
    """Ids of the measured jobs, after the warm-up ones."""
    key = service.new_key()
    client = ApiClient(service.port)
    measured = []
    try:
        for index in range(WARMUP_JOBS + jobs):
            job_id = await client.create_image(key, "[sleep 0] create to start")
            await client.wait_terminal(key, job_id)
            if index >= WARMUP_JOBS:
                measured.append(job_id)
            await asyncio.sleep(IDLE_PAUSE_SECONDS)
    finally:
        client.close()
    return measured
