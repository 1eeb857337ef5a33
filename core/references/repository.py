"""SQL for resolving references: the caller's media and image jobs."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.jobs.contract import IMAGE_TYPES
from core.tables import JobRow, Media


def media_owned(session: Session, media_id: str, account_id: str) -> Media | None:
    return session.scalars(
        select(Media).where(Media.id == media_id, Media.account_id == account_id)
    ).first()


def media_owned_by_key(session: Session, key: str, account_id: str) -> Media | None:
    return session.scalars(
        select(Media).where(Media.storage_key == key, Media.account_id == account_id)
    ).first()


def image_job_owned(session: Session, job_id: str, account_id: str) -> JobRow | None:
    return session.scalars(
        select(JobRow).where(
            JobRow.id == job_id,
            JobRow.account_id == account_id,
            JobRow.type.in_(IMAGE_TYPES),
            JobRow.deleted_at.is_(None),
        )
    ).first()


def add_media(session: Session, media: Media) -> None:
    session.add(media)


def generated_image_owned(session: Session, media_id: str, account_id: str) -> Media | None:
    """One of the account's generated images (not an upload or a fetched reference)."""
    return session.scalars(
        select(Media).where(
            Media.id == media_id, Media.account_id == account_id, Media.kind == "image"
        )
    ).first()
