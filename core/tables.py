"""The job records: SQLAlchemy 2 models shared by the gateway and the workers.

Portable across SQLite and PostgreSQL: UUIDs are stored as 36-character strings, JSON through
SQLAlchemy's JSON type (JSONB on PostgreSQL), and times as timezone-aware UTC.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ColumnClause,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    func,
    literal_column,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from core.clock import utcnow
from core.ids import new_id

JSONType = JSON().with_variant(JSONB(), "postgresql")


def load_json(text: str | bytes) -> Any:
    """A JSON column's value: orjson (a job read decodes its result on every poll, 3x faster),
    or the standard library where orjson refuses what `json.dumps` may have written (NaN,
    Infinity, integers past 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores aware UTC datetimes; SQLite hands them back naive, so make them aware again."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Plan(Base):
    __tablename__ = "plans"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tier: Mapped[str] = mapped_column(String(32))
    allows_video: Mapped[bool] = mapped_column(Boolean, default=True)
    max_inflight_images: Mapped[int] = mapped_column(Integer)
    max_inflight_videos: Mapped[int] = mapped_column(Integer)
    daily_generation_cap: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    plan_id: Mapped[str] = mapped_column(ForeignKey("plans.id"))
    # Kept beside the ledger and changed only in the same transaction as a ledger row.
    credit_balance: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The dashboard's sign-in: an argon2 hash (None: no password set, no sign-in).
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # Signs the deliveries of the webhooks named on creates (`whsec_...`; None: none made yet).
    webhook_secret: Mapped[str | None] = mapped_column(String(64), nullable=True)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # The first characters of the plaintext, to tell keys apart in listings.
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    state: Mapped[str] = mapped_column(String(16), default="active")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # "api": a key its owner holds. "dashboard": the account's one key that jobs created in the
    # dashboard are made with (for idempotency and rate limits); its secret is never kept, so no
    # request can present it, and key listings leave it out.
    purpose: Mapped[str] = mapped_column(String(16), default="api")


class DashboardSession(Base):
    """A signed-in browser: the cookie carries a secret whose hash is kept here."""

    __tablename__ = "dashboard_sessions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # Sent back in every state-changing form and compared with this one.
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Rolling: pushed forward as the session is used.
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class Invitation(Base):
    """A one-time sign-in link that sets a new account's password: the link carries a secret
    whose hash is kept here; used once, or never after `expires_at`."""

    __tablename__ = "invitations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Thumbnail(Base):
    """A small rendition of an image, made once from the media row and stored beside it."""

    __tablename__ = "thumbnails"

    media_id: Mapped[str] = mapped_column(ForeignKey("media.id"), primary_key=True)
    storage_key: Mapped[str] = mapped_column(String(512))
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class JobRow(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_account_created", "account_id", "created_at", "id"),
        Index("ix_jobs_status_dispatched", "status", "dispatched_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    api_key_id: Mapped[str | None] = mapped_column(ForeignKey("api_keys.id"), nullable=True)
    type: Mapped[str] = mapped_column(String(32))
    operation: Mapped[str] = mapped_column(String(32))
    queue: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    inputs: Mapped[dict[str, Any]] = mapped_column(JSONType)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    parent_job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), nullable=True)
    seed: Mapped[int] = mapped_column(BigInteger, default=0)
    credits_reserved: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    # The latest live preview of a processing job (`preview_folder`); shown only while it runs.
    preview_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Identifies the current claim, so a worker whose lease lapsed cannot complete the job.
    claim_token: Mapped[str | None] = mapped_column(String(36), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Set when the owner deletes the finished job: its inputs, result and media are gone, the
    # row stays because the credit ledger names it. Reads treat it as not found.
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The webhook named on the create ({"url", "events"}), None when none was.
    webhook: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)


# A pending job's place in its queue's order (`core/jobs/standing.py`): the moment it joined the
# broker's queue (its last publish), or its creation while not yet published. Partial, so the
# count of the jobs ahead of one reads only pending jobs' entries; the predicate is a literal, as
# the queries that use it write it (a bound parameter would hide it from the planner).
PENDING_LITERAL: ColumnClause[str] = literal_column("'pending'", String)
QUEUE_ORDER = func.coalesce(JobRow.dispatched_at, JobRow.created_at)
Index(
    "ix_jobs_pending_queue_order",
    JobRow.queue,
    QUEUE_ORDER,
    JobRow.id,
    postgresql_where=JobRow.status == PENDING_LITERAL,
    sqlite_where=JobRow.status == PENDING_LITERAL,
)
# A queue's recent runs, the history its wait estimates come from.
Index("ix_jobs_queue_finished", JobRow.queue, JobRow.finished_at)


class Media(Base):
    __tablename__ = "media"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), nullable=True, index=True)
    kind: Mapped[str] = mapped_column(String(16))
    storage_key: Mapped[str] = mapped_column(String(512), index=True)
    content_type: Mapped[str] = mapped_column(String(64))
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    size_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CreditEntry(Base):
    """One movement of credits; the account's balance is the sum of its entries."""

    __tablename__ = "credit_ledger"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), nullable=True, index=True)
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[int] = mapped_column(Integer)
    balance_after: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("api_key_id", "key", name="uq_idempotency_key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    api_key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id"))
    key: Mapped[str] = mapped_column(String(255))
    endpoint: Mapped[str] = mapped_column(String(128))
    body_hash: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class Upload(Base):
    """A presigned upload. Its bytes land at `staging_key`; completing it vets them and creates
    the media row (kind "upload") with the same id, after which `completed_at` is set. Once its
    URL has expired, housekeeping removes whatever a late PUT staged and sets
    `staging_purged_at`."""

    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    filename: Mapped[str] = mapped_column(String(255))
    declared_content_type: Mapped[str] = mapped_column(String(64))
    staging_key: Mapped[str] = mapped_column(String(512), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    staging_purged_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Style(Base):
    """A saved brand style: the StyleDetail fields, owned by an account."""

    __tablename__ = "styles"
    __table_args__ = (
        Index("ix_styles_account_created", "account_id", "created_at", "id"),
        Index("ix_styles_account_site", "account_id", "site"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    # The extraction that saved it last (a new extraction of its site saves over it).
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), nullable=True)
    name: Mapped[str] = mapped_column(String(200))
    url: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The address extraction was asked for, normalised (core/styles/sites.py): a new extraction
    # of the same site updates this style. None for a style not extracted.
    site: Mapped[str | None] = mapped_column(Text, nullable=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    tagline: Mapped[str | None] = mapped_column(Text, nullable=True)
    colours: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    typography: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    tone: Mapped[list[str]] = mapped_column(JSONType)
    aesthetic: Mapped[str] = mapped_column(Text)
    # The re-hosted logo in our storage (its URL is signed at read time).
    logo_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StyleAsset(Base):
    """An image in a style's linked folder, with the sentence embedding search ranks it by.

    The embedding is computed once, when the asset is added, and stored as the raw bytes of a
    float32 vector of unit length (384 values for MiniLM), so search reads it back without
    parsing. One media row is linked at most once per style."""

    __tablename__ = "style_assets"
    __table_args__ = (
        UniqueConstraint("style_id", "media_id", name="uq_style_assets_style_media"),
        Index("ix_style_assets_style_created", "style_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    style_id: Mapped[str] = mapped_column(ForeignKey("styles.id"))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    media_id: Mapped[str] = mapped_column(ForeignKey("media.id"))
    storage_key: Mapped[str] = mapped_column(String(512))
    # The asset's file name (SPEC.md "Style search hit" `name`).
    name: Mapped[str] = mapped_column(String(255))
    alt_text: Mapped[str] = mapped_column(Text, default="")
    surrounding_text: Mapped[str] = mapped_column(Text, default="")
    # "brand" (seeded by extraction), "upload" (the caller's upload or a public URL they
    # linked) or "generation" (one of their generated images).
    source: Mapped[str] = mapped_column(String(16))
    embedding: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookEndpoint(Base):
    """An account's standing webhook: every job event of the account its filter names is sent
    to its URL, signed with its secret."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(JSONType)
    secret: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The first failure of the unbroken run of failures going on now (None: the last went well).
    failing_since: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Set when it failed for too long; nothing more is sent to it. The reason is its owner's.
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    disabled_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class WebhookDelivery(Base):
    """The outbox: one job event for one URL, written in the transaction that changed the job,
    sent (and retried) by the deliverer. Its id is the `webhook-id` of every attempt."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_job", "job_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    # "job": the webhook named on the job's create, signed with the account's webhook secret;
    # "endpoint": one of the account's endpoints (None once it is deleted), signed with its own.
    source: Mapped[str] = mapped_column(String(16))
    endpoint_id: Mapped[str | None] = mapped_column(
        ForeignKey("webhook_endpoints.id", ondelete="SET NULL"), nullable=True
    )
    url: Mapped[str] = mapped_column(Text)
    event: Mapped[str] = mapped_column(String(16))
    # The job's columns as they were at the event (what its answer is made of).
    job_state: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # pending (to send, or to send again), delivered, failed (gave up).
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)


class WebhookAttempt(Base):
    """One try of a delivery: when, the answer's status code or the error, how long."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery", "delivery_id", "attempted_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.id"))
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    seconds: Mapped[float] = mapped_column(Float)
