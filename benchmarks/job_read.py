"""`job_read`: `GET /v1/jobs/{id}` of a completed job under 64 keep-alive clients, beside a bare
Starlette app that answers the same document from memory."""

from __future__ import annotations

import asyncio

from benchmarks.harness import MODES, ApiClient, Options, deployment, wait_for_http
from benchmarks.httpclient import request_bytes
from benchmarks.loadgen import LoadResult, LoadSpec, measure
from benchmarks.report import Section, Table, verdict
from benchmarks.testkit.processes import ChildProcess, running
from benchmarks.testkit.waits import free_port

CONNECTIONS = 64
# Issue 18's goals: the distributed gateway also crosses the network to PostgreSQL and Redis.
GOAL_RATIOS = {"embedded": 3.0, "distributed": 5.0}
METHOD = f"""
Requests per second and latency of `GET /v1/jobs/{{id}}` with a valid API key, on a completed
job, at {CONNECTIONS} concurrent keep-alive connections. The load comes from a second process (a
spawned `multiprocessing` child on uvloop) running a minimal raw-socket HTTP/1.1 client: each
connection sends a request, reads the answer, sends the next (closed loop). Each server is
measured alone, after a warm-up, for a fixed time. The sfumato gateway is a `sfumato serve`
subprocess, embedded (SQLite, in-memory broker, its idle workers in the same process) and
distributed (`--no-workers`, PostgreSQL, Redis; the idle worker process and PostgreSQL take CPU
outside the gateway). The yardstick is `benchmarks/bare_app.py`: a bare Starlette route that
answers the very document the gateway answered (`JSONResponse` of a dict held in memory), served
by uvicorn in its own process with the same settings as `sfumato serve`. CPU columns are CPU
seconds per wall second over the measured window (1.00 = one core busy), and server CPU
seconds per answered request; a load generator near 1.00 would mean the client, not the server,
set the pace, and server plus load generator near the number of cores would mean the two
competed for CPU. Goal: bare / sfumato within {GOAL_RATIOS["embedded"]:.0f}x embedded,
{GOAL_RATIOS["distributed"]:.0f}x distributed.
"""


def run(options: Options) -> Section:
    warmup = options.scaled(2.0, 1.0)
    seconds = options.scaled(10.0, 3.0)
    section = Section("job_read", METHOD)
    table = Table(
        [
            "server",
            "requests/s",
            "p50",
            "p99",
            "non-200",
            "server CPU",
            "server CPU per request",
            "load generator CPU",
            "bare / this",
        ]
    )
    results: dict[str, LoadResult] = {}
    document = b""
    for mode in MODES:
        with deployment(mode, options.work_dir / f"job_read-{mode}") as service:
            key = service.new_key()
            job_id, document = asyncio.run(_completed_job(service.port, key))
            request = request_bytes("GET", f"/v1/jobs/{job_id}", service.port, {"x-api-key": key})
            results[f"sfumato, {mode}"] = measure(
                LoadSpec(service.port, service.gateway.pid, request, CONNECTIONS, warmup, seconds)
            )
    bare_dir = options.work_dir / "job_read-bare"
    bare_dir.mkdir()
    document_path = bare_dir / "job.json"
    document_path.write_bytes(document)
    port = free_port()
    bare_app = ChildProcess(
        ["-m", "benchmarks.bare_app", "--port", str(port), "--document", str(document_path)],
        {},
        bare_dir / "bare_app.log",
    )
    with running(bare_app):
        wait_for_http(bare_app, port)
        # The same request bytes, key header included, so both servers parse the same input.
        request = request_bytes("GET", f"/v1/jobs/{job_id}", port, {"x-api-key": key})
        bare = measure(LoadSpec(port, bare_app.pid, request, CONNECTIONS, warmup, seconds))
    for name, result in [("bare Starlette", bare), *results.items()]:
        table.add(
            name,
            f"{result.requests_per_second:,.0f}",
            f"{result.p50_ms:.1f} ms",
            f"{result.p99_ms:.1f} ms",
            result.errors,
            f"{result.server_cpu:.2f}",
            f"{result.server_cpu / result.requests_per_second * 1000:.2f} ms",
            f"{result.client_cpu:.2f}",
            f"{bare.requests_per_second / result.requests_per_second:.1f}x",
        )
    section.tables.append(table)
    section.findings.append(
        f"Answer body: {len(document)} bytes of JSON; {seconds:.0f} s measured."
    )
    for name, result in [("bare Starlette", bare), *results.items()]:
        if result.errors:
            section.findings.append(
                f"{name}: {result.errors} answers were not 200, so its figures are not valid."
            )
    for mode in MODES:
        name = f"sfumato, {mode}"
        ratio = bare.requests_per_second / results[name].requests_per_second
        goal = GOAL_RATIOS[mode]
        section.findings.append(
            f"{name}: bare / sfumato = {ratio:.1f}x, goal within {goal:.0f}x "
            f"{verdict(ratio <= goal)}."
        )
    return section


async def _completed_job(port: int, key: str) -> tuple[str, bytes]:
    """A finished job's id and the body its read answers."""
    client = ApiClient(port)
    try:
        job_id = await client.create_image(key, "[sleep 0] job read")
        response = await client.wait_terminal(key, job_id)
    finally:
        client.close()
    if response.json()["data"]["status"] != "completed":
        raise RuntimeError(f"the job did not complete: {response.body!r}")
    return job_id, response.body
