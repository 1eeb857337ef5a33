"""SQL for jobs: inserts, reads, keyset pages and the compare-and-set transitions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnClause,
    Connection,
    String,
    and_,
    any_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session, aliased

from core.jobs.contract import IN_FLIGHT, JobStatus, Queue
from core.tables import (
    PENDING_LITERAL,
    QUEUE_ORDER,
    IdempotencyRecord,
    JobRow,
    JSONType,
    Media,
    UTCDateTime,
)
from core.webhooks.repository import outbox_from


def add(session: Session, job: JobRow) -> JobRow:
    session.add(job)
    session.flush()
    return job


def get(session: Session, job_id: str, *, for_update: bool = False) -> JobRow | None:
    query = select(JobRow).where(JobRow.id == job_id)
    if for_update:
        query = query.with_for_update()
    return session.scalars(query).first()


def page(
    session: Session,
    account_id: str,
    types: Sequence[str],
    status: str | None,
    after: tuple[datetime, str] | None,
    limit: int,
) -> Sequence[JobRow]:
    """Newest first, keyset on (created_at, id): stable under inserts, never OFFSET."""
    query = select(JobRow).where(
        JobRow.account_id == account_id, JobRow.type.in_(types), JobRow.deleted_at.is_(None)
    )
    if status is not None:
        query = query.where(JobRow.status == status)
    if after is not None:
        created_at, job_id = after
        query = query.where(
            or_(
                JobRow.created_at < created_at,
                and_(JobRow.created_at == created_at, JobRow.id < job_id),
            )
        )
    return session.scalars(
        query.order_by(JobRow.created_at.desc(), JobRow.id.desc()).limit(limit)
    ).all()


def mark_dispatched(
    session: Session, job_id: str, expected: datetime | None, moment: datetime | None
) -> bool:
    """Move `dispatched_at` from `expected` to `moment` if nobody else moved it first."""
    condition = (
        JobRow.dispatched_at.is_(None) if expected is None else JobRow.dispatched_at == expected
    )
    result = session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.status == JobStatus.PENDING, condition)
        .values(dispatched_at=moment)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


_FRESH = JobRow.status == JobStatus.PENDING
# Built once, like the job read: a claim is one statement, compiled once per process.
CLAIM = (
    update(JobRow)
    .where(
        JobRow.id == bindparam("job_id"),
        or_(
            _FRESH,
            and_(JobRow.status == JobStatus.PROCESSING, JobRow.claim_token == bindparam("token")),
        ),
    )
    .values(
        status=JobStatus.PROCESSING,
        claim_token=bindparam("token"),
        attempts=case((_FRESH, JobRow.attempts + 1), else_=JobRow.attempts),
        started_at=case(
            (_FRESH, bindparam("moment", type_=JobRow.started_at.type)), else_=JobRow.started_at
        ),
        lease_expires_at=bindparam("lease_until", type_=JobRow.lease_expires_at.type),
        # A new attempt starts without the previews of the one before (they were deleted).
        preview_key=case((_FRESH, None), else_=JobRow.preview_key),
    )
    .returning(*JobRow.__table__.columns)
)


def set_processing(
    connection: Connection, job_id: str, token: str, moment: datetime, lease_until: datetime
) -> JobRow | None:
    """pending -> processing under `token`: one statement, the claimed row in the same round
    trip (`RETURNING`), on a connection where it commits by itself. The same token finds its
    own claim again, its lease renewed (a claim retried because its commit's answer was lost);
    a redelivered or duplicated task of another claim finds None. The job comes back as a
    detached row object, in no session."""
    row = connection.execute(
        CLAIM,
        {"job_id": job_id, "token": token, "moment": moment, "lease_until": lease_until},
    ).first()
    return JobRow(**row._mapping) if row is not None else None


JOB_COLUMNS = ", ".join(column.name for column in JobRow.__table__.columns)
# `CLAIM` with the webhooks' outbox in the same statement (PostgreSQL's data-modifying CTEs):
# a fresh claim (`started_at` set now) writes its `started` deliveries; a claim found again by
# its own retry writes none.
CLAIM_WITH_OUTBOX = (
    text(
        f"""
        WITH claimed AS (
            UPDATE jobs SET status = 'processing', claim_token = :token,
                attempts = CASE WHEN status = 'pending' THEN attempts + 1 ELSE attempts END,
                started_at = CASE WHEN status = 'pending' THEN :moment ELSE started_at END,
                lease_expires_at = :lease_until
            WHERE id = :job_id
                AND (status = 'pending' OR (status = 'processing' AND claim_token = :token))
            RETURNING {JOB_COLUMNS}
        ), outbox AS ({outbox_from("claimed", "j.started_at = :moment")})
        SELECT {JOB_COLUMNS} FROM claimed
        """
    )
    .bindparams(
        bindparam("moment", type_=UTCDateTime()),
        bindparam("lease_until", type_=UTCDateTime()),
        bindparam("event", value="started"),
    )
    .columns(*JobRow.__table__.columns)
)


def set_processing_with_outbox(
    connection: Connection, job_id: str, token: str, moment: datetime, lease_until: datetime
) -> JobRow | None:
    """`set_processing` and its `started` webhook deliveries: one statement (PostgreSQL)."""
    row = connection.execute(
        CLAIM_WITH_OUTBOX,
        {"job_id": job_id, "token": token, "moment": moment, "lease_until": lease_until},
    ).first()
    return JobRow(**row._mapping) if row is not None else None


def renew_lease(
    session: Session, job_id: str, token: str, lease_until: datetime, progress: float
) -> bool:
    result = session.execute(
        update(JobRow)
        .where(
            JobRow.id == job_id, JobRow.claim_token == token, JobRow.status == JobStatus.PROCESSING
        )
        # Progress never goes back, not even when a job handed to another worker starts again.
        .values(
            lease_expires_at=lease_until,
            progress=case((JobRow.progress < progress, progress), else_=JobRow.progress),
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def set_preview(session: Session, job_id: str, token: str, key: str) -> bool:
    """The job's latest preview, while it is processing under this claim."""
    result = session.execute(
        update(JobRow)
        .where(
            JobRow.id == job_id, JobRow.claim_token == token, JobRow.status == JobStatus.PROCESSING
        )
        .values(preview_key=key)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def progress_of(session: Session, job_id: str) -> float | None:
    progress: float | None = session.scalar(select(JobRow.progress).where(JobRow.id == job_id))
    return progress


def transition(
    session: Session, job_id: str, from_status: str, token: str | None, **values: Any
) -> bool:
    """Compare-and-set from `from_status` (and, when given, the holder of the claim)."""
    conditions = [JobRow.id == job_id, JobRow.status == from_status]
    if token is not None:
        conditions.append(JobRow.claim_token == token)
    result = session.execute(update(JobRow).where(*conditions).values(**values))
    return bool(result.rowcount)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Completion:
    """What completing a job writes: the job's end under its claim, its media rows and its
    settle entry (`entry_id`, `reason`), all at `moment`."""

    job_id: str
    token: str
    moment: datetime
    result: dict[str, Any]
    message: str | None
    media: Sequence[Media]
    entry_id: str
    reason: str


# processing -> completed, its media rows, its settle entry in the ledger and its `completed`
# webhook deliveries: one statement (PostgreSQL's data-modifying CTEs), so one round trip and
# one commit where it runs by itself.
# The media and the entry are inserted from the updated row, so nothing is written when the
# compare-and-set finds the job no longer this claim's. The entry is `credits.settle`'s: the
# reservation becomes the charge, the balance (already lower) is recorded as it stands.
COMPLETE = text(
    f"""
    WITH done AS (
        UPDATE jobs SET status = 'completed', result = CAST(:result AS JSONB), progress = 1.0,
            message = :message, finished_at = :moment, lease_expires_at = NULL
        WHERE id = :job_id AND status = 'processing' AND claim_token = :token
        RETURNING *
    ), outbox AS (
        {outbox_from("done")}
    ), stored AS (
        INSERT INTO media (id, account_id, job_id, kind, storage_key, content_type, width,
            height, size_bytes, created_at)
        SELECT item.id, done.account_id, done.id, item.kind, item.storage_key,
            item.content_type, item.width, item.height, item.size_bytes, :moment
        FROM done, unnest(
            CAST(:media_ids AS VARCHAR[]), CAST(:kinds AS VARCHAR[]), CAST(:keys AS VARCHAR[]),
            CAST(:content_types AS VARCHAR[]), CAST(:widths AS INTEGER[]),
            CAST(:heights AS INTEGER[]), CAST(:sizes AS INTEGER[])
        ) AS item(id, kind, storage_key, content_type, width, height, size_bytes)
    ), settled AS (
        INSERT INTO credit_ledger (id, account_id, job_id, kind, amount, balance_after, reason,
            created_at)
        SELECT CAST(:entry_id AS VARCHAR), done.account_id, done.id, 'settle', 0,
            accounts.credit_balance, CAST(:reason AS TEXT), :moment
        FROM done JOIN accounts ON accounts.id = done.account_id
    )
    SELECT count(*) FROM done
    """
).bindparams(
    bindparam("result", type_=JSONType),
    bindparam("moment", type_=UTCDateTime()),
    bindparam("event", value="completed"),
)


def complete(connection: Connection, done: Completion) -> bool:
    """`COMPLETE` (PostgreSQL only); False when the job was not processing under `token`."""
    media = done.media
    completed = connection.execute(
        COMPLETE,
        {
            "job_id": done.job_id,
            "token": done.token,
            "moment": done.moment,
            "result": done.result,
            "message": done.message,
            "media_ids": [item.id for item in media],
            "kinds": [item.kind for item in media],
            "keys": [item.storage_key for item in media],
            "content_types": [item.content_type for item in media],
            "widths": [item.width for item in media],
            "heights": [item.height for item in media],
            "sizes": [item.size_bytes for item in media],
            "entry_id": done.entry_id,
            "reason": done.reason,
        },
    ).scalar_one()
    return bool(completed)


# `COMPLETE` as three statements of the caller's transaction, where one statement cannot do it
# (SQLite has no data-modifying CTEs; a job with rows of its own completes in a session): the
# compare-and-set, the media rows, the settle entry with the balance read in SQL. Prebuilt Core
# statements: the ORM's UPDATE and unit of work took two thirds of a 2.4 ms SQLite completion.
COMPLETE_JOB = (
    update(JobRow)
    .where(
        JobRow.id == bindparam("job_id"),
        JobRow.status == JobStatus.PROCESSING,
        JobRow.claim_token == bindparam("token"),
    )
    .values(
        status=JobStatus.COMPLETED,
        result=bindparam("result"),
        progress=1.0,
        message=bindparam("message"),
        finished_at=bindparam("moment"),
        lease_expires_at=None,
    )
    .returning(JobRow.account_id)
)
INSERT_MEDIA = insert(Media)
SETTLE_ENTRY = text(
    """
    INSERT INTO credit_ledger (id, account_id, job_id, kind, amount, balance_after, reason,
        created_at)
    SELECT CAST(:entry_id AS VARCHAR), accounts.id, CAST(:job_id AS VARCHAR), 'settle', 0,
        accounts.credit_balance, CAST(:reason AS TEXT), :moment
    FROM accounts WHERE accounts.id = :account_id
    """
).bindparams(bindparam("moment", type_=UTCDateTime()))


def complete_in_transaction(connection: Connection, done: Completion) -> bool:
    """`COMPLETE`'s writes in the transaction `connection` is in; False (nothing written) when
    the job was not processing under `token`."""
    job_id, moment = done.job_id, done.moment
    account_id = connection.execute(
        COMPLETE_JOB,
        {
            "job_id": job_id,
            "token": done.token,
            "result": done.result,
            "message": done.message,
            "moment": moment,
        },
    ).scalar_one_or_none()
    if account_id is None:
        return False
    if done.media:
        connection.execute(
            INSERT_MEDIA,
            [
                {
                    "id": item.id,
                    "account_id": account_id,
                    "job_id": job_id,
                    "kind": item.kind,
                    "storage_key": item.storage_key,
                    "content_type": item.content_type,
                    "width": item.width,
                    "height": item.height,
                    "size_bytes": item.size_bytes,
                    "created_at": moment,
                }
                for item in done.media
            ],
        )
    connection.execute(
        SETTLE_ENTRY,
        {
            "entry_id": done.entry_id,
            "job_id": job_id,
            "reason": done.reason,
            "moment": moment,
            "account_id": account_id,
        },
    )
    return True


def undispatched(session: Session, created_before: datetime, limit: int) -> Sequence[JobRow]:
    """Committed, never published jobs; videos excepted: they wait in their account's line."""
    return session.scalars(
        select(JobRow)
        .where(
            JobRow.status == JobStatus.PENDING,
            JobRow.dispatched_at.is_(None),
            JobRow.created_at < created_before,
            JobRow.queue != Queue.VIDEO,
        )
        .order_by(JobRow.created_at)
        .limit(limit)
    ).all()


def dispatched_but_unclaimed(
    session: Session, dispatched_before: datetime, limit: int
) -> Sequence[JobRow]:
    return session.scalars(
        select(JobRow)
        .where(JobRow.status == JobStatus.PENDING, JobRow.dispatched_at < dispatched_before)
        .order_by(JobRow.created_at)
        .limit(limit)
    ).all()


def lapsed_leases(session: Session, moment: datetime, limit: int) -> Sequence[JobRow]:
    return session.scalars(
        select(JobRow)
        .where(JobRow.status == JobStatus.PROCESSING, JobRow.lease_expires_at < moment)
        .order_by(JobRow.created_at)
        .limit(limit)
    ).all()


def orphan_all_in_flight(session: Session, lapsed_at: datetime) -> None:
    """After an embedded restart nothing holds a job: every in-flight one is published anew."""
    session.execute(
        update(JobRow).where(JobRow.status == JobStatus.PENDING).values(dispatched_at=None)
    )
    session.execute(
        update(JobRow)
        .where(JobRow.status == JobStatus.PROCESSING)
        .values(lease_expires_at=lapsed_at)
    )


def add_media(session: Session, media: Sequence[Media]) -> None:
    session.add_all(media)


def requeue_lapsed(session: Session, job_id: str, moment: datetime) -> bool:
    """processing with a lapsed lease -> pending, taking the claim from the lost worker."""
    result = session.execute(
        update(JobRow)
        .where(
            JobRow.id == job_id,
            JobRow.status == JobStatus.PROCESSING,
            JobRow.lease_expires_at < moment,
        )
        .values(
            status=JobStatus.PENDING, claim_token=None, lease_expires_at=None, dispatched_at=None
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def count_in_flight(session: Session, account_id: str, queue: str) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(JobRow)
            .where(
                JobRow.account_id == account_id,
                JobRow.queue == queue,
                JobRow.status.in_(IN_FLIGHT),
            )
        )
        or 0
    )


def count_created_since(
    session: Session, account_id: str, queues: Sequence[str], since: datetime
) -> int:
    """Jobs created since `since` that did not fail (a failure is refunded and not counted)."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(JobRow)
            .where(
                JobRow.account_id == account_id,
                JobRow.queue.in_(queues),
                JobRow.created_at >= since,
                JobRow.status != JobStatus.FAILED,
            )
        )
        or 0
    )


def video_line_held(session: Session, account_id: str) -> bool:
    """Whether one of the account's videos is running or published (it holds the line)."""
    holder = session.scalars(
        select(JobRow.id)
        .where(
            JobRow.account_id == account_id,
            JobRow.queue == Queue.VIDEO,
            or_(
                JobRow.status == JobStatus.PROCESSING,
                and_(JobRow.status == JobStatus.PENDING, JobRow.dispatched_at.is_not(None)),
            ),
        )
        .limit(1)
    ).first()
    return holder is not None


def next_in_video_line(session: Session, account_id: str) -> JobRow | None:
    return session.scalars(
        select(JobRow)
        .where(
            JobRow.account_id == account_id,
            JobRow.queue == Queue.VIDEO,
            JobRow.status == JobStatus.PENDING,
            JobRow.dispatched_at.is_(None),
        )
        .order_by(JobRow.created_at, JobRow.id)
        .limit(1)
    ).first()


def accounts_with_waiting_videos(session: Session, created_before: datetime) -> list[str]:
    return list(
        session.scalars(
            select(JobRow.account_id)
            .where(
                JobRow.queue == Queue.VIDEO,
                JobRow.status == JobStatus.PENDING,
                JobRow.dispatched_at.is_(None),
                JobRow.created_at < created_before,
            )
            .distinct()
        )
    )


# Where a pending image or style job stands: the pending jobs of its queue ahead of it in the
# broker's order (`QUEUE_ORDER`, then id), counted on the partial index
# `ix_jobs_pending_queue_order` (index ranges, never the table). Two counts, those before its
# moment and those at it with a smaller id: SQLite takes no row-value range on an expression
# index. The video line orders its queue otherwise (`video_line`).
VIDEO_LITERAL: ColumnClause[str] = literal_column("'video'", String)
_AHEAD = aliased(JobRow, name="ahead")
_AHEAD_ORDER = func.coalesce(_AHEAD.dispatched_at, _AHEAD.created_at)


def _pending_ahead(*conditions: Any) -> Any:
    return (
        select(func.count())
        .select_from(_AHEAD)
        .where(_AHEAD.status == PENDING_LITERAL, _AHEAD.queue == JobRow.queue, *conditions)
        .scalar_subquery()
    )


JOBS_AHEAD = _pending_ahead(_AHEAD_ORDER < QUEUE_ORDER) + _pending_ahead(
    _AHEAD_ORDER == QUEUE_ORDER, _AHEAD.id < JobRow.id
)
JOBS_AHEAD_BY_ID = select(JobRow.id, JOBS_AHEAD.label("ahead")).where(
    JobRow.id == bindparam("job_id")
)


# What the API shows of one of the account's jobs: the per-request poll, compiled once for the
# database and run on the driver's connection (core/driver_reads.py).
JOB_VIEW_COLUMNS = (
    JobRow.id,
    JobRow.account_id,
    JobRow.type,
    JobRow.queue,
    JobRow.status,
    JobRow.created_at,
    JobRow.result,
    JobRow.error,
    JobRow.progress,
    JobRow.message,
    JobRow.preview_key,
    # What a job in flight's standing is worked out from (`core/jobs/standing.py`), the jobs
    # ahead of a pending image or style job counted in the same statement (no other job's
    # read evaluates the count: a CASE runs its branch only when taken).
    JobRow.dispatched_at,
    JobRow.started_at,
    case(
        (and_(JobRow.status == PENDING_LITERAL, JobRow.queue != VIDEO_LITERAL), JOBS_AHEAD),
        else_=None,
    ).label("jobs_ahead"),
)
# SQLite: one job, read inline.
JOB_VIEW_BY_ID = select(*JOB_VIEW_COLUMNS).where(
    JobRow.id == bindparam("job_id"),
    JobRow.account_id == bindparam("account_id"),
    JobRow.deleted_at.is_(None),
)
# PostgreSQL: the jobs that concurrent polls asked for, in one statement (whose they are is
# checked on each row).
JOB_VIEWS_BY_IDS = select(*JOB_VIEW_COLUMNS).where(
    JobRow.id == any_(bindparam("keys")),
    JobRow.deleted_at.is_(None),
)


CLAIM_IS_CURRENT = select(JobRow.id).where(
    JobRow.id == bindparam("job_id"),
    JobRow.claim_token == bindparam("token"),
    JobRow.status == JobStatus.PROCESSING,
)


def claim_is_current(connection: Connection, job_id: str, token: str) -> bool:
    return (
        connection.execute(CLAIM_IS_CURRENT, {"job_id": job_id, "token": token}).first() is not None
    )


# Media a job made as its result (a style extraction's brand images belong to the style).
RESULT_MEDIA_KINDS = ("image", "video", "poster")


def get_owned_for_update(session: Session, job_id: str, account_id: str) -> JobRow | None:
    """One of the account's jobs that is not deleted, locked until the transaction ends."""
    return session.scalars(
        select(JobRow)
        .where(JobRow.id == job_id, JobRow.account_id == account_id, JobRow.deleted_at.is_(None))
        .with_for_update()
    ).first()


def result_media(session: Session, job_id: str) -> Sequence[Media]:
    return session.scalars(
        select(Media).where(Media.job_id == job_id, Media.kind.in_(RESULT_MEDIA_KINDS))
    ).all()


def in_flight_inputs(session: Session, account_id: str) -> list[dict[str, Any]]:
    """The inputs of the account's pending and processing jobs."""
    return list(
        session.scalars(
            select(JobRow.inputs).where(
                JobRow.account_id == account_id, JobRow.status.in_(IN_FLIGHT)
            )
        )
    )


def media_by_ids(session: Session, media_ids: Sequence[str]) -> Sequence[Media]:
    if not media_ids:
        return []
    return session.scalars(select(Media).where(Media.id.in_(media_ids))).all()


def delete_media(session: Session, media_ids: Sequence[str]) -> None:
    if media_ids:
        session.execute(delete(Media).where(Media.id.in_(media_ids)))


def mark_deleted(session: Session, job_id: str, moment: datetime) -> None:
    """Empty the job of what it held and mark it deleted; the row stays for the ledger, and
    its idempotency keys go (a retry after a deletion creates a new job)."""
    session.execute(
        update(JobRow)
        .where(JobRow.id == job_id)
        .values(deleted_at=moment, inputs={}, result=None, error=None, message=None)
    )
    session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.job_id == job_id))


def jobs_ahead(session: Session, job_id: str) -> int:
    return int(session.execute(JOBS_AHEAD_BY_ID, {"job_id": job_id}).one().ahead)


@dataclass(frozen=True)
class LineEntry:
    """An in-flight video as the video line's order needs it."""

    id: str
    account_id: str
    status: str
    created_at: datetime
    dispatched_at: datetime | None


def video_line(session: Session) -> list[LineEntry]:
    """Every video in flight: the video line is one in flight per account, so these are a few
    per account with videos (the plans' `max_inflight_videos`), never a backlog."""
    rows = session.execute(
        select(
            JobRow.id, JobRow.account_id, JobRow.status, JobRow.created_at, JobRow.dispatched_at
        ).where(JobRow.queue == Queue.VIDEO, JobRow.status.in_(IN_FLIGHT))
    ).all()
    return [LineEntry(*row) for row in rows]


@dataclass(frozen=True)
class Run:
    """A job's time on a worker: when it was claimed and how far it is (running), or when it
    finished."""

    started_at: datetime
    finished_at: datetime | None
    progress: float


def recent_runs(session: Session, queue: str, since: datetime, limit: int) -> list[Run]:
    """The queue's last `limit` jobs completed since `since`, newest first (on
    `ix_jobs_queue_finished`). Failed ones are left out: a cancel or a failure ends a run at
    any point, and says nothing of how long one takes."""
    rows = session.execute(
        select(JobRow.started_at, JobRow.finished_at, JobRow.progress)
        .where(
            JobRow.queue == queue,
            JobRow.finished_at >= since,
            JobRow.status == JobStatus.COMPLETED,
            JobRow.started_at.is_not(None),
        )
        .order_by(JobRow.finished_at.desc())
        .limit(limit)
    ).all()
    return [Run(started, finished, progress) for started, finished, progress in rows if started]


def running(session: Session, queue: str) -> list[Run]:
    """The queue's jobs on a worker now (as many as its busy worker slots)."""
    rows = session.execute(
        select(JobRow.started_at, JobRow.progress).where(
            JobRow.status == JobStatus.PROCESSING,
            JobRow.queue == queue,
            JobRow.started_at.is_not(None),
        )
    ).all()
    return [Run(started, None, progress) for started, progress in rows if started]
