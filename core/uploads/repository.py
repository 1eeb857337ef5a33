"""SQL for uploads and the media rows completed uploads become."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from core.pagination import newest_first
from core.tables import Media, Upload


def add(session: Session, upload: Upload) -> Upload:
    session.add(upload)
    session.flush()
    return upload


def get_owned(session: Session, upload_id: str, account_id: str) -> Upload | None:
    return session.scalars(
        select(Upload).where(Upload.id == upload_id, Upload.account_id == account_id)
    ).first()


def get_owned_by_staging_key(session: Session, key: str, account_id: str) -> Upload | None:
    return session.scalars(
        select(Upload).where(Upload.staging_key == key, Upload.account_id == account_id)
    ).first()


def by_staging_key(session: Session, key: str) -> Upload | None:
    return session.scalars(select(Upload).where(Upload.staging_key == key)).first()


def media_of(session: Session, upload: Upload) -> Media | None:
    """A completed upload's media row, which carries the upload's id."""
    return session.get(Media, upload.id)


def complete(session: Session, upload_id: str, moment: datetime, media: Media) -> bool:
    """Mark the upload completed and add its media, unless a concurrent complete won."""
    result = session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.completed_at.is_(None))
        .values(completed_at=moment)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        return False
    session.add(media)
    return True


def abandoned(session: Session, expired_before: datetime, limit: int) -> list[Upload]:
    """Uploads never completed whose URL expired before `expired_before`."""
    return list(
        session.scalars(
            select(Upload)
            .where(Upload.completed_at.is_(None), Upload.expires_at < expired_before)
            .order_by(Upload.expires_at)
            .limit(limit)
        )
    )


def remove(session: Session, upload_id: str) -> None:
    session.execute(delete(Upload).where(Upload.id == upload_id, Upload.completed_at.is_(None)))


def completed_with_expired_urls(session: Session, now: datetime, limit: int) -> list[Upload]:
    """Completed uploads whose URL can no longer PUT and whose staging was not purged yet."""
    return list(
        session.scalars(
            select(Upload)
            .where(
                Upload.completed_at.is_not(None),
                Upload.staging_purged_at.is_(None),
                Upload.expires_at < now,
            )
            .order_by(Upload.expires_at)
            .limit(limit)
        )
    )


def mark_staging_purged(session: Session, upload_ids: list[str], moment: datetime) -> None:
    session.execute(
        update(Upload).where(Upload.id.in_(upload_ids)).values(staging_purged_at=moment)
    )


def delete_owned(session: Session, upload_id: str) -> None:
    """The upload row, completed or not (its media row is the caller's to delete first)."""
    session.execute(delete(Upload).where(Upload.id == upload_id))


def media_page(
    session: Session, account_id: str, after: tuple[datetime, str] | None, limit: int
) -> Sequence[Media]:
    """The account's completed uploads, newest first, keyset on (created_at, id)."""
    query = select(Media).where(Media.account_id == account_id, Media.kind == "upload")
    return newest_first(session, query, Media, after, limit)


def filenames_of(session: Session, upload_ids: Iterable[str]) -> dict[str, str]:
    """Each upload's file name as the browser sent it, by id (a completed upload's media row
    has the same id)."""
    rows = session.execute(
        select(Upload.id, Upload.filename).where(Upload.id.in_(list(upload_ids)))
    )
    return {upload_id: filename for upload_id, filename in rows}
