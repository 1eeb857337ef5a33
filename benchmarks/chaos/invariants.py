"""What must hold over the soak's whole history, however the faults fell: checked from the
load's log of every answer, the database and the bucket's listing."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from benchmarks.chaos.cluster import BUCKET, WAIT_SECONDS, Cluster, s3_client
from benchmarks.chaos.faults import Fault
from core.tables import Account, CreditEntry, JobRow, Media, Style, Upload
from core.uploads.service import ABANDONED_AFTER, possible_final_keys

# A held long-poll answers within its hold plus this (a slow machine, a re-read after waking).
LONG_POLL_SLACK_SECONDS = 5.0
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


def accepted_jobs(events: list[dict[str, Any]]) -> set[str]:
    creates = {"generate", "edit", "video", "extract"}
    return {
        event["job"]
        for event in events
        if event["kind"] in creates and event["outcome"] == "202" and "job" in event
    }


def check(
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
    listing = s3_client(running.storage.target[1]).get_paginator("list_objects_v2")
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
    """The result as the load fingerprints it (benchmarks/chaos/load.py)."""
    result = job.result
    if job.status != "completed" or result is None:
        return None
    if "images" in result:
        return sorted(image["id"] for image in result["images"])
    if "video" in result:
        return result["video"]["id"]
    return result.get("style", {}).get("id")
