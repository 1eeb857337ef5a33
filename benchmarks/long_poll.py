"""`long_poll`: how soon a held `GET /v1/jobs/{id}?wait=true` answers once its job finishes, and
what holding thousands of them costs one gateway process."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from benchmarks.harness import MODES, ApiClient, Deployment, Options, deployment
from benchmarks.httpclient import HttpConnection, Response, request_bytes
from benchmarks.measures import cpu_seconds, open_file_limit, open_files, percentile, rss_mib
from benchmarks.report import Section, Table, ms, verdict

Item = TypeVar("Item")
Result = TypeVar("Result")
GOAL_P99_SECONDS = 0.005
# Held reads in one gateway, and the gateway's whole RSS while it holds them.
GOAL_HELD_READS = 10_000
GOAL_HELD_RSS_MIB = 1024
JOB_SECONDS = 0.5
# Longer than the held reads' whole setup (creating 10,000 jobs takes minutes): none finishes.
HELD_JOB_SECONDS = 3600
# Connections that create, then cancel, the jobs of the held reads side by side.
CONTROL_CONNECTIONS = 8
# Connections opened at once while setting up the held requests (below uvicorn's backlog).
OPENING_BATCH = 200
# Connections the gateway may have open beside the held reads' (the control connections, probes).
SPARE_CONNECTIONS = 100
METHOD = f"""
**Completion to answer.** Jobs of `[sleep {JOB_SECONDS}]`, one at a time: each is created, a
`wait=true` read is sent on its own connection right after the create (so it is held before the
job can finish), and its answer awaited before the next job (so no completion lands in a burst of
creates on this 2-core machine). A first job is read to the end on the reading gateway first, to
warm it. The latency is the time the client received the answer (`time.time()` at its last
byte) minus the job row's `finished_at`, read from the database afterwards; it spans the
completing transaction's commit, the event, the gateway's re-read of the job and the answer.
Goal: p99 under {GOAL_P99_SECONDS * 1000:.0f} ms.

**Thousands held.** One embedded `sfumato serve` with `SFUMATO_WAIT_SECONDS=600` and
`SFUMATO_MAX_CONCURRENCY` {SPARE_CONNECTIONS} above the held reads (uvicorn answers `503` to every
request while more connections than that are open, 1000 by default): jobs of `[sleep
{HELD_JOB_SECONDS}]` (longer than the run) are created (two start, the others stay pending: both
are non-terminal, so reads on them are held alike), then one `wait=true` read per job is sent, each
on its own connection from the benchmark process ({OPENING_BATCH} connections opened at once, each
batch's reads sent before the next batch opens, so no connection waits for its request past the
gateway's head deadline), and left held until the gateway's CPU settles. The gateway's RSS (VmRSS
in /proc) is read before the reads and while they are held. Then every job is cancelled through
`POST /v1/jobs/{{id}}/cancel` ({CONTROL_CONNECTIONS} connections) and the benchmark waits for all
held reads to answer, checking that each says `failed`. The benchmark process, which holds the
client ends of the connections, raises its open-file limit to the hard limit before it starts the
gateway, which inherits it (the table shows the gateway's limit and open files from /proc); both
need a limit above the held reads. Goal: {GOAL_HELD_READS:,} held, the gateway's RSS while it holds
them under {GOAL_HELD_RSS_MIB:,} MiB. The run stops with an error, printing no table, if any read
was answered before the cancels or the gateway holds fewer open files than reads.
"""


@dataclass(frozen=True)
class HeldRead:
    job_id: str
    sent_at: float
    answer: asyncio.Future[Response]


def run(options: Options) -> Section:
    jobs = options.scaled(100, 20)
    held = options.scaled(GOAL_HELD_READS, 300)
    section = Section("long_poll", METHOD)
    latency_table = Table(["mode", "jobs", "p50", "p99", "max"])
    for mode in MODES:
        env = {"SFUMATO_WAIT_SECONDS": "120"}
        with deployment(mode, options.work_dir / f"long_poll-{mode}", env) as service:
            latencies = sorted(asyncio.run(completion_to_answer(service, jobs)))
        p99 = percentile(latencies, 0.99)
        latency_table.add(
            mode, len(latencies), ms(percentile(latencies, 0.50)), ms(p99), ms(latencies[-1])
        )
        section.findings.append(
            f"{mode}: completion to answer p99 {ms(p99)}, goal under "
            f"{GOAL_P99_SECONDS * 1000:.0f} ms {verdict(p99 < GOAL_P99_SECONDS)}."
        )
    section.tables.append(latency_table)
    env = {
        "SFUMATO_WAIT_SECONDS": "600",
        "SFUMATO_MAX_CONCURRENCY": str(held + SPARE_CONNECTIONS),
    }
    with deployment("embedded", options.work_dir / "long_poll-held", env) as service:
        held_table, rss_held = asyncio.run(_hold_many(service, held))
    section.tables.append(held_table)
    section.findings.append(
        f"{held:,} held reads, gateway RSS {rss_held:.0f} MiB; goal {GOAL_HELD_READS:,} held "
        f"under {GOAL_HELD_RSS_MIB} MiB "
        f"{verdict(held >= GOAL_HELD_READS and rss_held < GOAL_HELD_RSS_MIB)}."
    )
    return section


async def completion_to_answer(
    service: Deployment, jobs: int, reader_port: int | None = None
) -> list[float]:
    """Seconds from each job's finished_at to its held read's answer; the reads go to
    `reader_port` when given (another gateway of the deployment), else to the creating one.
    One job at a time: each is created, its read held, and its answer awaited before the next,
    so no completion lands in a burst of creates on this 2-core machine (the wake latency, not
    the machine's queueing behind other work)."""
    key = service.new_key()
    creator = ApiClient(service.port)
    reader_port = reader_port or service.port
    warm_reader = ApiClient(reader_port)
    readers: list[HttpConnection] = []
    reads: list[HeldRead] = []
    try:
        # A first job end to end, read where the held reads go, so that every process (the
        # reading gateway's database pool and threads included) has warmed up.
        await warm_reader.wait_terminal(key, await creator.create_image(key, "[sleep 0] x"))
        for _ in range(jobs):
            job_id = await creator.create_image(key, f"[sleep {JOB_SECONDS}] long poll")
            reader = await HttpConnection.open(reader_port)
            readers.append(reader)
            request = request_bytes(
                "GET", f"/v1/jobs/{job_id}?wait=true", reader_port, {"x-api-key": key}
            )
            reads.append(HeldRead(job_id, time.time(), reader.send(request)))
            await reads[-1].answer
    finally:
        creator.close()
        warm_reader.close()
        for reader in readers:
            reader.close()
    times = service.job_times([read.job_id for read in reads])
    latencies = []
    for read in reads:
        answer = read.answer.result()
        if answer.status != 200 or answer.json()["data"]["status"] != "completed":
            raise RuntimeError(f"the read of job {read.job_id} answered {answer.body!r}")
        finished_at = times[read.job_id].finished_at
        assert finished_at is not None
        if read.sent_at >= finished_at.timestamp():
            raise RuntimeError(f"job {read.job_id} finished before its read was sent")
        latencies.append(answer.received_at - finished_at.timestamp())
    return latencies


async def _hold_many(service: Deployment, count: int) -> tuple[Table, float]:
    """The table of `count` held reads, and the gateway's RSS (MiB) while it held them."""
    pid = service.gateway.pid
    for process in (os.getpid(), pid):
        if open_file_limit(process) <= count + SPARE_CONNECTIONS:
            raise RuntimeError(
                f"process {process} may open {open_file_limit(process)} files: too few for "
                f"{count} held reads (raise the hard limit, `ulimit -Hn`)"
            )
    key = service.new_key()
    controls = [ApiClient(service.port) for _ in range(CONTROL_CONNECTIONS)]
    rss_idle = rss_mib(pid)
    started = time.perf_counter()
    prompt = f"[sleep {HELD_JOB_SECONDS}] x"
    job_ids = await _side_by_side(
        controls, range(count), lambda client, _: client.create_image(key, prompt)
    )
    created_took = time.perf_counter() - started
    rss_before = rss_mib(pid)
    connections: list[HttpConnection] = []
    answers: list[asyncio.Future[Response]] = []
    for start in range(0, count, OPENING_BATCH):
        batch = job_ids[start : start + OPENING_BATCH]
        opened = await asyncio.gather(*(HttpConnection.open(service.port) for _ in batch))
        connections += opened
        answers += [
            connection.send(
                request_bytes(
                    "GET", f"/v1/jobs/{job_id}?wait=true", service.port, {"x-api-key": key}
                )
            )
            for connection, job_id in zip(opened, batch, strict=True)
        ]
    await _until_idle(pid)
    rss_held = rss_mib(pid)
    files_held = open_files(pid)
    answered_early = sum(answer.done() for answer in answers)
    _check_held(answers, files_held)
    started = time.perf_counter()
    cancelled = await _side_by_side(
        controls, job_ids, lambda client, job_id: client.call("POST", f"/jobs/{job_id}/cancel", key)
    )
    cancels_took = time.perf_counter() - started
    responses = await asyncio.wait_for(asyncio.gather(*answers), timeout=300)
    all_answered_took = time.perf_counter() - started
    for client in controls:
        client.close()
    for connection in connections:
        connection.close()
    refused = sum(response.status != 200 for response in cancelled)
    wrong = sum(
        response.status != 200 or response.json()["data"]["status"] != "failed"
        for response in responses
    )
    table = Table([f"{count} held reads", "value"])
    table.add("gateway RSS, idle after start", f"{rss_idle:.0f} MiB")
    table.add(f"gateway RSS after creating the {count} jobs", f"{rss_before:.0f} MiB")
    table.add("gateway RSS while holding the reads", f"{rss_held:.0f} MiB")
    table.add("RSS per held read", f"{(rss_held - rss_before) * 1024 / count:.1f} KiB")
    table.add("gateway open files while holding the reads", files_held)
    table.add("gateway open-file limit", open_file_limit(pid))
    table.add(f"time to create the {count} jobs", f"{created_took:.2f} s")
    table.add("reads answered before any cancel (should be 0)", answered_early)
    table.add(f"time to cancel the {count} jobs", f"{cancels_took:.2f} s")
    table.add("time from the first cancel to the last held answer", f"{all_answered_took:.2f} s")
    table.add("cancels refused (should be 0)", refused)
    table.add("held reads not answered `failed` (should be 0)", wrong)
    return table, rss_held


def _check_held(answers: Sequence[asyncio.Future[Response]], files_held: int) -> None:
    """Raises unless every read is still held, each on an open connection of the gateway: a
    table of reads answered at once (refused, say) would measure nothing."""
    early = [answer for answer in answers if answer.done()]
    if early:
        outcomes = Counter(
            f"{answer.result().status} {answer.result().body[:120]!r}"
            if answer.exception() is None
            else repr(answer.exception())
            for answer in early
        )
        raise RuntimeError(
            f"{len(early)} of {len(answers)} reads answered before any cancel, not held: "
            f"{dict(outcomes.most_common(3))}"
        )
    if files_held < len(answers):
        raise RuntimeError(
            f"the gateway holds {files_held} open files for {len(answers)} held reads"
        )


async def _side_by_side(
    clients: Sequence[ApiClient],
    items: Sequence[Item],
    call: Callable[[ApiClient, Item], Awaitable[Result]],
) -> list[Result]:
    """`call(client, item)` for every item, the clients working side by side; results in the
    items' order."""
    results: dict[int, Result] = {}

    async def work(client: ApiClient, first: int) -> None:
        for index in range(first, len(items), len(clients)):
            results[index] = await call(client, items[index])

    await asyncio.gather(*(work(client, first) for first, client in enumerate(clients)))
    return [results[index] for index in range(len(items))]


async def _until_idle(pid: int, timeout: float = 60) -> None:
    """Until the gateway has spent less than a fifth of a core over half a second: it has read
    every held job and subscribed to its events."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        await asyncio.sleep(0.5)
        if cpu_seconds(pid) - before < 0.1:
            return
    raise RuntimeError(f"the gateway stayed busy for {timeout}s with the held reads")
