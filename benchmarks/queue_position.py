"""`queue_position`: what reading a pending job's standing costs with a backlog behind it, and how
close its `estimatedStartAt` comes to when it really starts."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import insert

from benchmarks.harness import MODES, ApiClient, Deployment, JobTimes, Options, deployment
from benchmarks.httpclient import request_bytes
from benchmarks.loadgen import LoadResult, LoadSpec, measure
from benchmarks.measures import percentile
from benchmarks.report import Section, Table, ms
from core.accounts import authentication
from core.clock import utcnow
from core.ids import new_id
from core.jobs.standing import HISTORY_RUNS
from core.tables import JobRow

BACKLOGS = (10, 1_000, 10_000)
# A read's latency alone (one connection, closed loop), and under concurrent polls.
CONNECTIONS = (1, 16)
# Job lengths of the accuracy backlog, seconds: uneven, from instant to several seconds.
LENGTHS = (0.1, 0.3, 0.5, 1.0, 2.0, 4.0)
# Nothing sweeps during the latency runs: their pending rows are written straight to the
# database as published jobs, and a sweep would hand them to the workers.
QUIET_SWEEP = {"SFUMATO_SWEEP_INTERVAL_SECONDS": "3600", "SFUMATO_DISPATCH_GRACE_SECONDS": "3600"}
METHOD = f"""
**Read latency.** `GET /v1/jobs/{{id}}` of a pending image job with {
    ", ".join(f"{n:,}" for n in BACKLOGS)
} pending image jobs in its queue, the read job the last of them (position = backlog,
the most jobs ahead to count), beside the read of a completed job on the same server. The
backlog's rows are written straight to the database as published pending jobs (the periodic
sweep is held off, so no worker takes them); the gateway is a `sfumato serve` subprocess,
embedded (SQLite) and distributed (`--no-workers`, PostgreSQL, Redis). Closed-loop load from a
second process on {" and ".join(str(c) for c in CONNECTIONS)} keep-alive connections, after a
warm-up. A pending job's read counts the jobs ahead of it in its own statement
(`repository.JOBS_AHEAD`: two counts on the partial index `ix_jobs_pending_queue_order`), and
its answer adds its queue's pace (two small queries, kept a second per process).

**Accuracy.** On a fresh deployment of each mode (the image queue: 2 jobs at once), a history of
{HISTORY_RUNS} uneven jobs runs first (as many as the estimate reads; `[sleep S]`, S drawn from
{", ".join(str(s) for s in LENGTHS)} s, a fixed seed), then a backlog of the same mix is created
at once; each job's `estimatedStartAt` is read right after its create and compared with its real
start (`started_at`, from the database afterwards). Error = estimated - real; the table gives
|error| (median, p90, max), the median signed error (negative: it started later than said), the
median real wait, and the median of |error| / real wait.
"""


def run(options: Options) -> Section:
    section = Section("queue_position", METHOD)
    latency = Table(["mode", "read job", "connections", "requests/s", "p50", "p99", "non-200"])
    accuracy = Table(
        [
            "mode",
            "jobs",
            "median |error|",
            "p90 |error|",
            "max |error|",
            "median error",
            "median wait",
            "median |error| / wait",
        ]
    )
    p50s: dict[tuple[str, str], float] = {}
    seconds = options.scaled(4.0, 1.5)
    for mode in MODES:
        with deployment(
            mode, options.work_dir / f"queue_position-{mode}", extra_env=QUIET_SWEEP
        ) as service:
            for (job, connections), result in _latencies(service, seconds):
                latency.add(mode, job, connections, *_load_cells(result))
                if connections == 1:
                    p50s[mode, job] = result.p50_ms
        history = options.scaled(HISTORY_RUNS, 12)
        with deployment(mode, options.work_dir / f"queue_accuracy-{mode}") as service:
            measured = asyncio.run(_accuracy(service, history, options.scaled(40, 12)))
        errors, waits = measured.errors, measured.waits
        magnitudes = sorted(abs(error) for error in errors)
        relative = sorted(
            abs(error) / max(wait, 0.01) for error, wait in zip(errors, waits, strict=True)
        )
        accuracy.add(
            mode,
            len(errors),
            f"{percentile(magnitudes, 0.5):.2f} s",
            f"{percentile(magnitudes, 0.9):.2f} s",
            f"{magnitudes[-1]:.2f} s",
            f"{percentile(sorted(errors), 0.5):+.2f} s",
            f"{percentile(sorted(waits), 0.5):.2f} s",
            f"{percentile(relative, 0.5):.0%}",
        )
        section.findings.append(
            f"{mode}: the estimates take the history's mean run, {measured.history_run:.2f} s; "
            f"the backlog's own was {measured.backlog_run:.2f} s (over the k runs ahead of a "
            "job, a difference adds up about k / slots times: no estimate knows the lengths of "
            "jobs not yet run). An early median error beyond that difference is time a slot "
            "spends per job outside its run (claim to completion)."
        )
        deepest = f"pending, position {BACKLOGS[-1]:,}"
        section.findings.append(
            f"{mode}: one read at a time, a pending job's read with {BACKLOGS[-1]:,} jobs ahead "
            f"takes {p50s[mode, deepest]:.1f} ms (p50) against {p50s[mode, 'completed']:.1f} ms "
            "for a completed job's: the count of the jobs ahead grows with them (an index "
            "range, never the table)."
        )
    section.tables += [latency, accuracy]
    return section


def _load_cells(result: LoadResult) -> list[str]:
    return [
        f"{result.requests_per_second:,.0f}",
        ms(result.p50_ms / 1000),
        ms(result.p99_ms / 1000),
        str(result.errors),
    ]


def _latencies(service: Deployment, seconds: float) -> list[tuple[tuple[str, int], LoadResult]]:
    key = service.new_key()
    caller = authentication.authenticate(service.db, key)
    assert caller is not None
    completed = asyncio.run(_completed_job(service, key))
    results = []
    for connections in CONNECTIONS:
        results.append(
            (("completed", connections), _read_load(service, key, completed, connections, seconds))
        )
    written = 0
    start = utcnow()
    for backlog in BACKLOGS:
        last = _write_pending(service, caller.account_id, start, written, backlog)
        written = backlog
        for connections in CONNECTIONS:
            results.append(
                (
                    (f"pending, position {backlog:,}", connections),
                    _read_load(service, key, last, connections, seconds),
                )
            )
    return results


def _read_load(
    service: Deployment, key: str, job_id: str, connections: int, seconds: float
) -> LoadResult:
    request = request_bytes("GET", f"/v1/jobs/{job_id}", service.port, {"x-api-key": key})
    return measure(
        LoadSpec(
            service.port, service.gateway.pid, request, connections, min(1.0, seconds), seconds
        )
    )


async def _completed_job(service: Deployment, key: str) -> str:
    client = ApiClient(service.port)
    try:
        job_id = await client.create_image(key, "[sleep 0] queue position reference")
        await client.wait_terminal(key, job_id)
    finally:
        client.close()
    return job_id


def _write_pending(
    service: Deployment, account_id: str, start: datetime, first: int, until: int
) -> str:
    """Pending image jobs number `first` to `until` - 1, published in that order (as the
    gateway would have made them, a millisecond apart); the id of the last."""
    rows = []
    for number in range(first, until):
        moment = start + timedelta(milliseconds=number)
        rows.append(
            {
                "id": new_id(),
                "account_id": account_id,
                "type": "image.generate",
                "operation": "generate",
                "queue": "image",
                "status": "pending",
                "inputs": {},
                "seed": 0,
                "credits_reserved": 0,
                "attempts": 0,
                "progress": 0.0,
                "created_at": moment,
                "dispatched_at": moment + timedelta(microseconds=500),
            }
        )
    with service.db.write() as session:
        session.execute(insert(JobRow), rows)
    return str(rows[-1]["id"])


@dataclass
class Accuracy:
    """Each backlog job's estimated start minus its real start and its real wait (seconds), and
    the mean run of the history and of the backlog."""

    errors: list[float]
    waits: list[float]
    history_run: float
    backlog_run: float


def _mean_run(times: dict[str, JobTimes]) -> float:
    runs = [
        (row.finished_at - row.started_at).total_seconds()
        for row in times.values()
        if row.started_at is not None and row.finished_at is not None
    ]
    return sum(runs) / len(runs)


async def _accuracy(service: Deployment, history_jobs: int, jobs: int) -> Accuracy:
    draw = random.Random(34)
    key = service.new_key()
    client = ApiClient(service.port)
    try:
        history = [
            await client.create_image(key, f"[sleep {draw.choice(LENGTHS)}] history")
            for _ in range(history_jobs)
        ]
        for job_id in history:
            await client.wait_terminal(key, job_id)
        backlog: list[str] = []
        estimates: dict[str, datetime] = {}
        for _ in range(jobs):
            job_id = await client.create_image(key, f"[sleep {draw.choice(LENGTHS)}] backlog")
            backlog.append(job_id)
            read = (await client.call("GET", f"/jobs/{job_id}", key)).json()["data"]
            if read["status"] == "pending" and read.get("estimatedStartAt"):
                estimates[job_id] = datetime.fromisoformat(
                    read["estimatedStartAt"].replace("Z", "+00:00")
                )
        for job_id in backlog:
            await client.wait_terminal(key, job_id)
    finally:
        client.close()
    times = service.job_times(backlog)
    errors, waits = [], []
    for job_id, estimate in estimates.items():
        started = times[job_id].started_at
        assert started is not None
        errors.append((estimate - started).total_seconds())
        waits.append((started - times[job_id].created_at).total_seconds())
    if not errors:
        raise RuntimeError("no backlog job was read pending with an estimate")
    return Accuracy(errors, waits, _mean_run(service.job_times(history)), _mean_run(times))
