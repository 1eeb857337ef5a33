"""`startup`: how long a process takes from its start to serving, and where the time goes."""

from __future__ import annotations

import http.client
import re
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import (
    CONFIG_FILE,
    REDIS_URL,
    Options,
    temporary_postgres_database,
)
from benchmarks.report import Section, Table, verdict
from benchmarks.testkit.processes import ChildProcess, running
from benchmarks.testkit.waits import free_port

GOAL_REPLICA_SECONDS = 1.5
RUNS = 5
# How often readiness is asked for: the measured time is late by at most this much.
POLL_SECONDS = 0.01
# A hang guard, not a goal.
START_TIMEOUT = 240
READY_LINE = re.compile(
    r"ready in [\d.]+ s \(imports (?P<imports>[\d.]+) s, migrations (?P<migrations>[\d.]+) s, "
    r"warm-up (?P<warm_up>[\d.]+) s\)"
)
METHOD = f"""
Each process started {RUNS} times as an operator starts it (`python -m sfumato ...`, a new
interpreter each time), on a database its first, unmeasured start already migrated (what a new
replica or pod pays), the median shown. Total: from spawning the process to its `/readyz`
answering 200 (asked every {POLL_SECONDS * 1000:.0f} ms; a gateway is ready when it listens, its
database and broker answer and its sentence model is loaded) or, for a worker, to its log's
`ready in` line (Celery consuming, its pipelines warmed up). The split is the process's own line
(`sfumato/startup.py`): imports (from the command's start through the service's modules),
migrations (the schema checked and brought to head, the plans written), warm-up (the rest:
pipelines, the sentence model, the server or consumer started); "interpreter" is the total
minus the three (Python's own start, Typer, the command line parsed). Embedded: `sfumato serve`,
SQLite, the in-memory broker, one worker per queue in the process. Replica: `sfumato serve
--no-workers` on PostgreSQL and Redis. Worker: `sfumato worker --queue image` on PostgreSQL and
Redis. Goal: a replica ready in under {GOAL_REPLICA_SECONDS} s.
"""


@dataclass(frozen=True)
class Start:
    total: float
    imports: float
    migrations: float
    warm_up: float

    @property
    def interpreter(self) -> float:
        return self.total - self.imports - self.migrations - self.warm_up


def run(options: Options) -> Section:
    runs = options.scaled(RUNS, 2)
    section = Section("startup", METHOD)
    table = Table(["process", "runs", "total", "interpreter", "imports", "migrations", "warm-up"])
    with ExitStack() as stack:
        database = stack.enter_context(temporary_postgres_database())
        distributed = {
            "SFUMATO_DATABASE_URL": database,
            "SFUMATO_BROKER_URL": REDIS_URL,
            "SFUMATO_NAMESPACE": f"bench-{uuid.uuid4().hex[:8]}",
        }
        kinds: list[tuple[str, list[str], dict[str, str], bool]] = [
            ("embedded `serve`", ["serve"], {}, True),
            ("replica `serve --no-workers`", ["serve", "--no-workers"], distributed, True),
            ("worker `--queue image`", ["worker", "--queue", "image"], distributed, False),
        ]
        for name, args, env, http in kinds:
            folder = options.work_dir / f"startup-{len(table.rows)}"
            starts = list(_starts(folder, args, env, http, runs + 1))[1:]
            columns = [
                [start.total for start in starts],
                [start.interpreter for start in starts],
                [start.imports for start in starts],
                [start.migrations for start in starts],
                [start.warm_up for start in starts],
            ]
            medians = [statistics.median(column) for column in columns]
            table.add(name, runs, *(f"{value:.2f} s" for value in medians))
            if name.startswith("replica"):
                section.findings.append(
                    f"A gateway replica is ready in {medians[0]:.2f} s (median), goal under "
                    f"{GOAL_REPLICA_SECONDS} s {verdict(medians[0] < GOAL_REPLICA_SECONDS)}."
                )
    section.tables.append(table)
    return section


def _starts(
    folder: Path, args: list[str], extra_env: dict[str, str], http: bool, times: int
) -> Iterator[Start]:
    """`times` starts of one command, each stopped once measured; the first migrates."""
    folder.mkdir(parents=True)
    env = {
        "SFUMATO_DATA_DIR": str(folder),
        "SFUMATO_CONFIG_FILE": str(CONFIG_FILE),
        **extra_env,
    }
    for index in range(times):
        yield _start_once(folder / f"start-{index}.log", args, env, http)


def _start_once(log: Path, args: list[str], env: dict[str, str], http: bool) -> Start:
    port = free_port()
    command = [*args, "--port", str(port)] if http else args
    started = time.perf_counter()
    with running(ChildProcess.sfumato(command, env, log)) as child:
        if http:
            child.wait_for(lambda: _answers_ready(port), START_TIMEOUT, "/readyz", POLL_SECONDS)
            total = time.perf_counter() - started
        child.wait_for(
            lambda: _ready_line(log) is not None, START_TIMEOUT, "the ready line", POLL_SECONDS
        )
        if not http:
            total = time.perf_counter() - started
    line = _ready_line(log)
    assert line is not None
    return Start(total, *line)


def _ready_line(log: Path) -> tuple[float, float, float] | None:
    """The split the process logged: imports, migrations, warm-up."""
    found = READY_LINE.search(log.read_text(errors="replace"))
    if found is None:
        return None
    return float(found["imports"]), float(found["migrations"]), float(found["warm_up"])


def _answers_ready(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()
