"""The soak from start to report: the deployment up, the load and the faults for the given
minutes, the drain, the invariants checked, the section written."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from sqlalchemy import select

from benchmarks.chaos.cluster import LEASE_SECONDS, SCRATCH_BYTES, WAIT_SECONDS, Cluster, cluster
from benchmarks.chaos.faults import FAULT_KINDS, Faults
from benchmarks.chaos.invariants import Outcome, accepted_jobs, check
from benchmarks.harness import Options
from benchmarks.measures import percentile
from benchmarks.report import Section, Table
from benchmarks.testkit.processes import ChildProcess
from benchmarks.testkit.sites import site_server
from core.accounts import api_keys
from core.accounts import service as accounts
from core.tables import JobRow

DRAIN_SECONDS = 600
# Accounts: two that never run out, two whose balances run out during the soak.
BALANCES = (100_000, 100_000, 60, 120)
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
        load = ChildProcess(
            ["-m", "benchmarks.chaos.load", str(plan_file)], {}, folder / "load.log"
        ).start()
        started = time.monotonic()
        with Faults(running, started, interval) as faults:
            assert load.popen is not None
            load.popen.wait(minutes * 60 + 300)
        if load.popen.returncode != 0:
            raise RuntimeError(f"the load exited with {load.popen.returncode} (see load.log)")
        print("  load done, faults stopped; draining", flush=True)
        events = [json.loads(line) for line in history.read_text().splitlines() if line]
        accepted = accepted_jobs(events)
        _drain(running, timeout=DRAIN_SECONDS)
        return check(running, events, accepted, faults.log, minutes)


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
