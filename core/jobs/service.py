"""The rules of a job's life: create with a credit reservation, cancel, claim, finish.

Every transition is a compare-and-set on the row and carries its credit movement in the same
transaction, so redelivered tasks, racing cancels and lost workers charge exactly once.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from core.accounts.service import Caller
from core.clock import utcnow
from core.credits import service as credits
from core.db import Database
from core.ids import new_id
from core.jobs import repository
from core.models import Job, Media
from core.pagination import decode_cursor, encode_cursor

CANCELLED_MESSAGE = "Job cancelled"
# Cancelling a job a worker already started keeps this much of its price (CONTRACT.md).
CANCEL_PROCESSING_FEE = 1


def failure(message: str) -> dict[str, str]:
    return {"code": "GENERATION_FAILED", "message": message}


@dataclass(frozen=True)
class NewJob:
    type: str
    operation: str
    queue: str
    inputs: dict[str, Any]
    price: int
    parent_job_id: str | None = None


@dataclass(frozen=True)
class Claim:
    job: Job
    token: str


def create(db: Database, caller: Caller, new: NewJob) -> Job:
    """Insert the pending job and reserve its price in one transaction (all or nothing)."""
    job_id = new_id()
    with db.write() as session:
        job = repository.add(
            session,
            Job(
                id=job_id,
                account_id=caller.account_id,
                api_key_id=caller.api_key_id,
                type=new.type,
                operation=new.operation,
                queue=new.queue,
                status="pending",
                inputs=new.inputs,
                parent_job_id=new.parent_job_id,
                seed=secrets.randbits(31),
                credits_reserved=new.price,
                created_at=utcnow(),
            ),
        )
        credits.reserve(session, caller.account_id, job_id, new.price)
    return job


def get_owned(db: Database, account_id: str, job_id: str) -> Job | None:
    with db.read() as session:
        return repository.get_owned(session, job_id, account_id)


def list_page(
    db: Database,
    account_id: str,
    types: Sequence[str],
    status: str | None,
    cursor: str | None,
    limit: int,
) -> tuple[list[Job], str | None]:
    """One page and the cursor of the next (None on the last page). Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        rows = list(repository.page(session, account_id, types, status, after, limit + 1))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1].created_at, rows[-1].id)


def cancel(db: Database, account_id: str, job_id: str) -> tuple[Job | None, bool]:
    """The job after cancelling, and whether it was in flight (so a worker may need telling)."""
    with db.write() as session:
        job = repository.get(session, job_id, for_update=True)
        if job is None or job.account_id != account_id:
            return None, False
        if job.status not in repository.NON_TERMINAL:
            return job, False
        previous = job.status
        moment = utcnow()
        if not repository.transition(
            session,
            job.id,
            previous,
            None,
            status="failed",
            error=failure(CANCELLED_MESSAGE),
            finished_at=moment,
            lease_expires_at=None,
        ):
            return repository.get(session, job_id), False
        kept = min(CANCEL_PROCESSING_FEE, job.credits_reserved) if previous == "processing" else 0
        credits.refund(session, account_id, job.id, job.credits_reserved - kept, "cancelled")
        if kept:
            credits.settle(session, account_id, job.id, kept)
        session.refresh(job)
        return job, True


def claim(db: Database, job_id: str, lease_seconds: float) -> Claim | None:
    """Take a pending job for this worker, or None when it is not (or no longer) pending."""
    token = new_id()
    moment = utcnow()
    with db.write() as session:
        if not repository.claim(
            session, job_id, token, moment, moment + timedelta(seconds=lease_seconds)
        ):
            return None
        job = repository.get(session, job_id)
        assert job is not None
        return Claim(job=job, token=token)


def renew_lease(db: Database, claim: Claim, lease_seconds: float, progress: float) -> bool:
    """Keep the claim alive; False when the job was cancelled or taken from this worker."""
    with db.write() as session:
        return repository.renew_lease(
            session,
            claim.job.id,
            claim.token,
            utcnow() + timedelta(seconds=lease_seconds),
            progress,
        )


def complete(
    db: Database, claim: Claim, result: dict[str, Any], media: Sequence[Media], message: str | None
) -> bool:
    """processing -> completed, settling the charge; False if cancelled or lost meanwhile."""
    job = claim.job
    with db.write() as session:
        if not repository.transition(
            session,
            job.id,
            "processing",
            claim.token,
            status="completed",
            result=result,
            progress=1.0,
            message=message,
            finished_at=utcnow(),
            lease_expires_at=None,
        ):
            return False
        repository.add_media(session, media)
        credits.settle(session, job.account_id, job.id, job.credits_reserved)
        return True


def fail(db: Database, claim: Claim, message: str) -> bool:
    """processing -> failed with a full refund; False if it was no longer this worker's."""
    job = claim.job
    with db.write() as session:
        if not repository.transition(
            session,
            job.id,
            "processing",
            claim.token,
            status="failed",
            error=failure(message),
            finished_at=utcnow(),
            lease_expires_at=None,
        ):
            return False
        credits.refund(session, job.account_id, job.id, job.credits_reserved, "failed")
        return True


def recover_lapsed(db: Database, job: Job, max_attempts: int) -> bool:
    """A job whose worker vanished: back to pending, or failed and refunded when it has had
    its attempts. True when it went back to pending and must be published."""
    moment = utcnow()
    with db.write() as session:
        if job.attempts >= max_attempts:
            if repository.transition(
                session,
                job.id,
                "processing",
                job.claim_token,
                status="failed",
                error=failure(f"the worker was lost {job.attempts} times; giving up"),
                finished_at=moment,
                lease_expires_at=None,
            ):
                credits.refund(session, job.account_id, job.id, job.credits_reserved, "failed")
            return False
        return repository.requeue_lapsed(session, job.id, moment)
