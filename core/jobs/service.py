"""The rules of a job's life, one transaction per transition: create with a credit
reservation, cancel, claim, finish, hand back; and the reads of jobs.

Every transition is a compare-and-set on the row and carries its credit movement in the same
transaction, so redelivered tasks, racing cancels and lost workers charge exactly once; and the
webhook deliveries it causes (`core/webhooks/outbox.py`), so none is lost or sent for a change
that did not happen. These
only commit: `core/jobs/lifecycle.py` calls them and then publishes what each changed (the state
event, the task), and is what the gateway and the workers use.
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from core import removal
from core.accounts import repository as accounts_repository
from core.accounts.service import Caller
from core.clock import utcnow
from core.credits import service as credits
from core.db import Database
from core.errors import Conflict, DomainError, NotFound
from core.idempotency import repository as idempotency_repository
from core.ids import new_id
from core.jobs import repository
from core.jobs.contract import (
    GENERATION_QUEUES,
    IN_FLIGHT,
    JobStatus,
    JobType,
    Queue,
    VideoResult,
    preview_folder,
)
from core.jobs.requests import RequestModel
from core.pagination import decode_cursor, page_of
from core.services import Services
from core.tables import Account, JobRow, Media, Plan
from core.webhooks import outbox
from core.webhooks.events import JobEvent

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
    # The create's webhook ({"url", "events"}), checked (core/webhooks/service.job_webhook).
    webhook: dict[str, Any] | None = None
    # The seed the create asked for; None: a random one (the job reports it either way).
    seed: int | None = None


@dataclass(frozen=True)
class Claim:
    job: JobRow
    token: str


@dataclass(frozen=True)
class IdempotentRequest:
    """A create sent with an `Idempotency-Key`: the key, the endpoint it was sent to and its
    body's hash; a retry must repeat both to be a replay."""

    key: str
    endpoint: str
    body_hash: str

    @classmethod
    def of(cls, key: str, endpoint: str, request: RequestModel) -> IdempotentRequest:
        """The body hashed as the API receives it (camelCase, defaults filled in), so the same
        request hashes alike whichever front end made it."""
        canonical = json.dumps(request.wire(), sort_keys=True, separators=(",", ":"))
        return cls(key, endpoint, hashlib.sha256(canonical.encode()).hexdigest())


class CreateRefused(DomainError):
    """A create the account's plan does not allow, or a reused Idempotency-Key; nothing was
    written. (A balance too low is `core.credits.service.InsufficientCredits`.)"""


class SubscriptionRequired(CreateRefused):
    status = 402
    code = "SUBSCRIPTION_REQUIRED"

    def __init__(self, reason: str) -> None:
        super().__init__(f"A subscription is required: {reason}")


class ConcurrentLimitReached(CreateRefused):
    status = 429
    code = "CONCURRENT_LIMIT_REACHED"

    def __init__(self, limit: int, in_flight: int) -> None:
        super().__init__(
            "Too many generations in flight; poll the existing jobs before starting more",
            {"limit": limit, "inFlight": in_flight},
        )
        self.limit = limit
        self.in_flight = in_flight


class UsageLimitExceeded(CreateRefused):
    status = 429
    code = "USAGE_LIMIT_EXCEEDED"

    def __init__(self, cap: int, retry_after: int) -> None:
        super().__init__(
            f"Usage limit exceeded: the daily cap of {cap} generations is spent",
            {"dailyLimit": cap},
            retry_after=retry_after,
        )
        self.cap = cap


class IdempotencyKeyReused(CreateRefused):
    status = 422
    code = "IDEMPOTENCY_KEY_REUSED"

    def __init__(self) -> None:
        super().__init__("This Idempotency-Key was already used with a different request")


IDEMPOTENCY_TTL = timedelta(hours=24)


def _check_plan(
    session: Session, account: Account, plan: Plan | None, new: NewJob, moment: datetime
) -> None:
    if plan is None:
        raise SubscriptionRequired(f"the account's plan {account.plan_id!r} does not exist")
    if new.queue not in GENERATION_QUEUES:
        return
    if new.queue == Queue.VIDEO and not plan.allows_video:
        raise SubscriptionRequired(f"the {plan.id} plan does not include video")
    limit = plan.max_inflight_videos if new.queue == Queue.VIDEO else plan.max_inflight_images
    in_flight = repository.count_in_flight(session, account.id, new.queue)
    if in_flight >= limit:
        raise ConcurrentLimitReached(limit, in_flight)
    if plan.daily_generation_cap is not None:
        midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        created = repository.count_created_since(session, account.id, GENERATION_QUEUES, midnight)
        if created >= plan.daily_generation_cap:
            next_midnight = midnight + timedelta(days=1)
            retry_after = max(1, math.ceil((next_midnight - moment).total_seconds()))
            raise UsageLimitExceeded(plan.daily_generation_cap, retry_after)


def _replay(
    session: Session, caller: Caller, claim: IdempotentRequest, moment: datetime
) -> JobRow | None:
    """The job an earlier request with this key created, or None when the key is fresh."""
    record = idempotency_repository.find(session, caller.api_key_id, claim.key)
    if record is None:
        return None
    if record.expires_at <= moment:
        idempotency_repository.remove(session, record.id)
        return None
    if record.endpoint != claim.endpoint or record.body_hash != claim.body_hash:
        raise IdempotencyKeyReused()
    return repository.get(session, record.job_id)


def insert_pending(
    db: Database,
    caller: Caller,
    new: NewJob,
    idempotency: IdempotentRequest | None = None,
    now: datetime | None = None,
) -> tuple[JobRow, bool]:
    """Insert the pending job and reserve its price in one transaction (all or nothing).

    Returns the job and whether it is the replay of an earlier request with the same
    Idempotency-Key (then nothing new is created or charged). Raises `CreateRefused`."""
    moment = now or utcnow()
    job_id = new_id()
    with db.write() as session:
        account, plan = accounts_repository.lock_account_with_plan(session, caller.account_id)
        if idempotency is not None:
            replayed = _replay(session, caller, idempotency, moment)
            if replayed is not None:
                return replayed, True
        _check_plan(session, account, plan, new, moment)
        job = repository.add(
            session,
            JobRow(
                id=job_id,
                account_id=caller.account_id,
                api_key_id=caller.api_key_id,
                type=new.type,
                operation=new.operation,
                queue=new.queue,
                status=JobStatus.PENDING,
                inputs=new.inputs,
                parent_job_id=new.parent_job_id,
                seed=secrets.randbits(31) if new.seed is None else new.seed,
                credits_reserved=new.price,
                created_at=moment,
                webhook=new.webhook,
            ),
        )
        credits.reserve(session, caller.account_id, job_id, new.price)
        if idempotency is not None:
            idempotency_repository.add(
                session,
                api_key_id=caller.api_key_id,
                key=idempotency.key,
                endpoint=idempotency.endpoint,
                body_hash=idempotency.body_hash,
                job_id=job_id,
                created_at=moment,
                expires_at=moment + IDEMPOTENCY_TTL,
            )
    return job, False


def purge_idempotency_records(db: Database) -> int:
    with db.write() as session:
        return idempotency_repository.purge_expired(session, utcnow())


async def view_owned(db: Database, account_id: str, job_id: str) -> Any:
    """The account's job as the API shows it (id, type, queue, status, times, result, error),
    read on the driver's own connection: this is the poll every client makes, often."""
    if db.is_sqlite:
        return db.driver_reads.one(
            repository.JOB_VIEW_BY_ID, {"job_id": job_id, "account_id": account_id}
        )
    job = await db.driver_reads.by_key(repository.JOB_VIEWS_BY_IDS, job_id)
    return job if job is not None and job.account_id == account_id else None


def get_owned(db: Database, account_id: str, job_id: str) -> JobRow | None:
    """The whole row of one of the account's jobs (inputs included), or None."""
    with db.read() as session:
        job = repository.get(session, job_id)
    return job if job is not None and job.account_id == account_id else None


def list_page(
    db: Database,
    account_id: str,
    types: Sequence[str],
    status: str | None,
    cursor: str | None,
    limit: int,
) -> tuple[list[JobRow], str | None]:
    """One page and the cursor of the next (None on the last page). Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        rows = list(repository.page(session, account_id, types, status, after, limit + 1))
    return page_of(rows, limit)


def cancel(db: Database, account_id: str, job_id: str) -> tuple[JobRow | None, bool]:
    """The job after cancelling, and whether it was in flight (so a worker may need telling)."""
    with db.write() as session:
        job = repository.get(session, job_id, for_update=True)
        if job is None or job.account_id != account_id or job.deleted_at is not None:
            return None, False
        if job.status not in IN_FLIGHT:
            return job, False
        previous = job.status
        moment = utcnow()
        if not repository.transition(
            session,
            job.id,
            previous,
            None,
            status=JobStatus.FAILED,
            error=failure(CANCELLED_MESSAGE),
            finished_at=moment,
            lease_expires_at=None,
        ):
            return repository.get(session, job_id), False
        kept = (
            min(CANCEL_PROCESSING_FEE, job.credits_reserved)
            if previous == JobStatus.PROCESSING
            else 0
        )
        credits.refund(session, account_id, job.id, job.credits_reserved - kept, "cancelled")
        if kept:
            credits.settle(session, account_id, job.id, kept)
        outbox.record(session, job.id, JobEvent.FAILED, moment)
        session.refresh(job)
        return job, True


def take_pending(
    db: Database, job_id: str, lease_seconds: float, token: str | None = None
) -> Claim | None:
    """Take a pending job for this worker, or None when it is not (or no longer) pending.
    `token` names this delivery's claim: claiming again with it returns the claim it already
    holds, so a retry after a lost commit answer recovers the job at once."""
    token = token or new_id()
    moment = utcnow()
    lease_until = moment + timedelta(seconds=lease_seconds)
    if not db.is_sqlite:
        # One statement (its webhook deliveries in it) committing by itself: one round trip.
        with db.statements() as connection:
            job = repository.set_processing_with_outbox(
                connection, job_id, token, moment, lease_until
            )
        return Claim(job=job, token=token) if job is not None else None
    with db.write() as session:
        job = repository.set_processing(session.connection(), job_id, token, moment, lease_until)
        # A claim found again by its own retry started nothing new.
        if job is not None and job.started_at == moment:
            outbox.record(session, job_id, JobEvent.STARTED, moment)
    return Claim(job=job, token=token) if job is not None else None


def renew_lease(db: Database, claim: Claim, lease_seconds: float, progress: float) -> bool:
    """Keep the claim alive; False when the job was cancelled or taken from this worker."""
    moment = utcnow()
    with db.write() as session:
        before = repository.progress_of(session, claim.job.id)
        renewed = repository.renew_lease(
            session, claim.job.id, claim.token, moment + timedelta(seconds=lease_seconds), progress
        )
        # A renewal that only keeps the lease is no progress event.
        if renewed and before is not None and progress > before:
            outbox.record(session, claim.job.id, JobEvent.PROGRESS, moment)
        return renewed


def show_preview(db: Database, claim: Claim, key: str) -> bool:
    """Point the job at its latest preview; False when it is no longer this claim's to run."""
    with db.write() as session:
        return repository.set_preview(session, claim.job.id, claim.token, key)


def holds_claim(db: Database, claim: Claim) -> bool:
    """Whether the job is still processing under this claim (not cancelled, not taken over)."""
    with db.statements() as connection:
        return repository.claim_is_current(connection, claim.job.id, claim.token)


def complete(
    db: Database,
    claim: Claim,
    result: dict[str, Any],
    media: Sequence[Media],
    message: str | None,
    save: Callable[[Session], None] | None = None,
) -> bool:
    """processing -> completed, settling the charge, with the media and the job's other writes
    (`save`: a style extraction saves its style) in the same transaction; False if cancelled or
    lost meanwhile.

    On PostgreSQL a job without other rows completes in one statement committing by itself, its
    webhook deliveries in it (`repository.COMPLETE`: one round trip, one durable commit);
    SQLite, which has no data-modifying CTEs, and a job with other writes (ORM objects) write the
    same rows with `repository.complete_in_transaction`'s statements and `outbox.record`, in one
    transaction."""
    job = claim.job
    completion = repository.Completion(
        job_id=job.id,
        token=claim.token,
        moment=utcnow(),
        result=result,
        message=message,
        media=media,
        entry_id=new_id(),
        reason=credits.settle_reason(job.credits_reserved),
    )
    if save is None and not db.is_sqlite:
        with db.statements() as connection:
            if repository.complete(connection, completion):
                return True
        with db.read() as session:
            return _ended_by(session, claim, JobStatus.COMPLETED)
    with db.write() as session:
        if not repository.complete_in_transaction(session.connection(), completion):
            return _ended_by(session, claim, JobStatus.COMPLETED)
        if save is not None:
            save(session)
        outbox.record(session, job.id, JobEvent.COMPLETED, completion.moment)
        return True


def attach_poster(db: Database, job_id: str, poster: Media) -> bool:
    """Add a completed video's poster to its result (made just after the video is stored)."""
    with db.write() as session:
        job = repository.get(session, job_id, for_update=True)
        if job is None or job.status != JobStatus.COMPLETED or job.type != JobType.VIDEO_GENERATE:
            return False
        result = VideoResult.model_validate(job.result)
        video = result.video.model_copy(update={"thumbnail_key": poster.storage_key})
        job.result = VideoResult(video=video).stored()
        repository.add_media(session, [poster])
        return True


def fail(db: Database, claim: Claim, message: str) -> bool:
    """processing -> failed with a full refund; False if it was no longer this worker's."""
    with db.write() as session:
        if not _fail_and_refund(session, claim.job, claim.token, message, utcnow()):
            return _ended_by(session, claim, JobStatus.FAILED)
        return True


def _fail_and_refund(
    session: Session, job: JobRow, token: str | None, message: str, moment: datetime
) -> bool:
    """processing (under `token`) -> failed, its reservation refunded in full, in the caller's
    transaction; False when the row was not processing under that claim."""
    if not repository.transition(
        session,
        job.id,
        JobStatus.PROCESSING,
        token,
        status=JobStatus.FAILED,
        error=failure(message),
        finished_at=moment,
        lease_expires_at=None,
    ):
        return False
    credits.refund(session, job.account_id, job.id, job.credits_reserved, "failed")
    outbox.record(session, job.id, JobEvent.FAILED, moment)
    return True


def _ended_by(session: Session, claim: Claim, status: JobStatus) -> bool:
    """Whether this claim already ended the job so: an earlier try whose commit landed but
    whose answer was lost (the connection dropped), retried. Its rows are all there."""
    job = repository.get(session, claim.job.id)
    return job is not None and job.status == status and job.claim_token == claim.token


def hand_back(db: Database, claim: Claim) -> bool:
    """processing -> pending from a worker that is shutting down before the job could finish:
    the claim is given up and the attempt it spent given back (the job did not fail, its worker
    went away on purpose). False when the job was no longer this worker's."""
    with db.write() as session:
        return repository.transition(
            session,
            claim.job.id,
            JobStatus.PROCESSING,
            claim.token,
            status=JobStatus.PENDING,
            claim_token=None,
            lease_expires_at=None,
            dispatched_at=None,
            attempts=JobRow.attempts - 1,
        )


def recover_lapsed(db: Database, job: JobRow, max_attempts: int) -> JobStatus | None:
    """A job whose worker vanished: back to pending, or failed and refunded when it has had
    its attempts. Returns the status it went to (None when another sweep got there first)."""
    moment = utcnow()
    with db.write() as session:
        if job.attempts >= max_attempts:
            message = f"the worker was lost {job.attempts} times; giving up"
            if not _fail_and_refund(session, job, job.claim_token, message, moment):
                return None
            return JobStatus.FAILED
        if not repository.requeue_lapsed(session, job.id, moment):
            return None
        return JobStatus.PENDING


class JobInFlight(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "Job is still pending or processing; cancel it first (POST /v1/jobs/{id}/cancel)"
        )


def delete(services: Services, account_id: str, job_id: str) -> None:
    """Delete a finished job of the account: its images or video leave storage and every style
    folder, its inputs and result are erased, and its row stays, marked deleted, because the
    credit ledger names it (reads then answer 404). A job in flight is refused (cancel it
    first), and so is one whose images an in-flight job is using."""
    with services.db.write() as session:
        job = repository.get_owned_for_update(session, job_id, account_id)
        if job is None:
            raise NotFound("Job")
        if job.status in IN_FLIGHT:
            raise JobInFlight()
        media = repository.result_media(session, job.id)
        removal.refuse_if_input_of_job_in_flight(session, account_id, media, "An image of this job")
        keys = removal.drop_media(session, media)
        repository.mark_deleted(session, job.id, utcnow())
    removal.delete_stored(services.storage, keys)
    # Its live previews went when it ended; any a worker wrote late go with the job.
    removal.delete_stored(
        services.storage, removal.keys_under(services.storage, preview_folder(job.id))
    )
