"""SQL for thumbnails: the small renditions of images."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from core.tables import Media, Thumbnail


def owned_media(session: Session, media_id: str, account_id: str) -> Media | None:
    return session.scalars(
        select(Media).where(Media.id == media_id, Media.account_id == account_id)
    ).first()


def get(session: Session, media_id: str) -> Thumbnail | None:
    return session.get(Thumbnail, media_id)


def keys_of(session: Session, media_ids: Iterable[str]) -> dict[str, str]:
    """Media id -> thumbnail storage key, for those that have one (one query for a page)."""
    ids = list(media_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(Thumbnail.media_id, Thumbnail.storage_key).where(Thumbnail.media_id.in_(ids))
    )
    return {media_id: key for media_id, key in rows}


def add_unless_present(session: Session, thumbnail: Thumbnail) -> Thumbnail:
    """The stored thumbnail: this one, or the one a concurrent request stored first."""
    existing = session.get(Thumbnail, thumbnail.media_id)
    if existing is not None:
        return existing
    session.add(thumbnail)
    session.flush()
    return thumbnail


def delete_of(session: Session, media_ids: Iterable[str]) -> list[str]:
    """Delete the thumbnails of these media (before the media rows they point at); their
    storage keys."""
    ids = list(media_ids)
    keys = list(keys_of(session, ids).values())
    if keys:
        session.execute(delete(Thumbnail).where(Thumbnail.media_id.in_(ids)))
    return keys
