"""Closed-loop load from a second process: N keep-alive connections, each sending one request,
waiting for its answer, and sending the next, for a fixed time after a warm-up."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import uvloop

from benchmarks.httpclient import HttpConnection
from benchmarks.measures import cpu_seconds, percentile, raise_fd_limit


@dataclass(frozen=True)
class LoadSpec:
    port: int
    # The server's process, whose CPU time is read over the measured window.
    server_pid: int
    request: bytes
    connections: int
    warmup_seconds: float
    seconds: float


@dataclass(frozen=True)
class LoadResult:
    requests: int
    errors: int
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    # CPU time of the server over the measured window, per wall second (1.0 = one core busy).
    server_cpu: float
    # CPU time of the load generator over the measured window, per wall second: near 1.0 would
    # mean the client, not the server, limited the rate.
    client_cpu: float


def measure(spec: LoadSpec) -> LoadResult:
    """Runs the load in a fresh process, so that it shares no interpreter lock with anything."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_run_in_child, spec).result()


def _run_in_child(spec: LoadSpec) -> LoadResult:
    raise_fd_limit()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(_load(spec))


async def _load(spec: LoadSpec) -> LoadResult:
    connections = [await HttpConnection.open(spec.port) for _ in range(spec.connections)]
    measure_from = time.perf_counter() + spec.warmup_seconds
    measure_until = measure_from + spec.seconds
    latencies: list[float] = []
    errors = 0

    async def client(connection: HttpConnection) -> None:
        nonlocal errors
        while True:
            started = time.perf_counter()
            if started >= measure_until:
                return
            response = await connection.send(spec.request)
            if started >= measure_from:
                latencies.append(time.perf_counter() - started)
                errors += response.status != 200

    clients = asyncio.gather(*(client(connection) for connection in connections))
    await asyncio.sleep(max(0.0, measure_from - time.perf_counter()))
    client_cpu_before = time.process_time()
    server_cpu_before = cpu_seconds(spec.server_pid)
    await asyncio.sleep(max(0.0, measure_until - time.perf_counter()))
    client_cpu = (time.process_time() - client_cpu_before) / spec.seconds
    server_cpu = (cpu_seconds(spec.server_pid) - server_cpu_before) / spec.seconds
    await clients
    for connection in connections:
        connection.close()
    latencies.sort()
    return LoadResult(
        requests=len(latencies),
        errors=errors,
        requests_per_second=len(latencies) / spec.seconds,
        p50_ms=percentile(latencies, 0.50) * 1000,
        p99_ms=percentile(latencies, 0.99) * 1000,
        server_cpu=server_cpu,
        client_cpu=client_cpu,
    )
