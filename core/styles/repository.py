"""SQL for saved brand styles and the assets of their linked folders."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select
from sqlalchemy.orm import Session

from core.pagination import newest_first
from core.tables import Media, Style, StyleAsset


def add(session: Session, style: Style) -> None:
    session.add(style)


def get_owned(
    session: Session, style_id: str, account_id: str, *, for_update: bool = False
) -> Style | None:
    query = select(Style).where(Style.id == style_id, Style.account_id == account_id)
    if for_update:
        query = query.with_for_update()
    return session.scalars(query).first()


def newest_of_site(session: Session, account_id: str, site: str) -> Style | None:
    return session.scalars(
        select(Style)
        .where(Style.account_id == account_id, Style.site == site)
        .order_by(Style.created_at.desc(), Style.id.desc())
        .limit(1)
    ).first()


def page(
    session: Session, account_id: str, after: tuple[datetime, str] | None, limit: int
) -> Sequence[Style]:
    return newest_first(
        session, select(Style).where(Style.account_id == account_id), Style, after, limit
    )


def asset_page(
    session: Session, style_id: str, after: tuple[datetime, str] | None, limit: int
) -> Sequence[StyleAsset]:
    return newest_first(
        session, select(StyleAsset).where(StyleAsset.style_id == style_id), StyleAsset, after, limit
    )


def assets_of_media(
    session: Session, style_id: str, media_ids: Sequence[str]
) -> dict[str, StyleAsset]:
    """The style's assets that link these media rows, by media id."""
    rows = session.scalars(
        select(StyleAsset).where(
            StyleAsset.style_id == style_id, StyleAsset.media_id.in_(list(media_ids))
        )
    ).all()
    return {row.media_id: row for row in rows}


def add_assets(session: Session, assets: Sequence[StyleAsset]) -> None:
    session.add_all(assets)


def folder_version(connection: Connection, style_id: str, account_id: str) -> Any | None:
    """(count, newest created_at) of the style's assets, or None when the style is not the
    account's: one small indexed query. Assets are only ever added, so the pair changes exactly
    when the folder does."""
    return connection.execute(
        select(func.count(StyleAsset.id), func.max(StyleAsset.created_at))
        .select_from(Style)
        .outerjoin(StyleAsset, StyleAsset.style_id == Style.id)
        .where(Style.id == style_id, Style.account_id == account_id)
        .group_by(Style.id)
    ).first()


def search_matrix(connection: Connection, style_id: str) -> Sequence[Any]:
    """(id, name, storage_key, embedding) of every asset of the style, oldest first: just the
    columns ranking needs, as plain rows (no ORM objects: the hot path of search)."""
    return connection.execute(
        select(StyleAsset.id, StyleAsset.name, StyleAsset.storage_key, StyleAsset.embedding)
        .where(StyleAsset.style_id == style_id)
        .order_by(StyleAsset.created_at, StyleAsset.id)
    ).all()


def unlink_media(session: Session, media_ids: Sequence[str]) -> None:
    """Take these media out of every style's folder."""
    if media_ids:
        session.execute(delete(StyleAsset).where(StyleAsset.media_id.in_(media_ids)))


def assets_of_style(session: Session, style_id: str) -> Sequence[StyleAsset]:
    return session.scalars(select(StyleAsset).where(StyleAsset.style_id == style_id)).all()


def media_linked_elsewhere(session: Session, media_ids: Sequence[str], style_id: str) -> set[str]:
    """Which of these media are also in another style's folder."""
    if not media_ids:
        return set()
    return set(
        session.scalars(
            select(StyleAsset.media_id).where(
                StyleAsset.media_id.in_(media_ids), StyleAsset.style_id != style_id
            )
        )
    )


def brand_media_not_of_job(session: Session, style_id: str, job_id: str) -> Sequence[Media]:
    """The brand images in the style's folder that another extraction than `job_id` stored."""
    return session.scalars(
        select(Media)
        .join(StyleAsset, StyleAsset.media_id == Media.id)
        .where(
            StyleAsset.style_id == style_id,
            Media.kind == "brand",
            Media.job_id.is_distinct_from(job_id),
        )
    ).all()


def unlink_from_style(session: Session, style_id: str, media_ids: Sequence[str]) -> None:
    if media_ids:
        session.execute(
            delete(StyleAsset).where(
                StyleAsset.style_id == style_id, StyleAsset.media_id.in_(list(media_ids))
            )
        )


def delete_style(session: Session, style_id: str) -> None:
    session.execute(delete(StyleAsset).where(StyleAsset.style_id == style_id))
    session.execute(delete(Style).where(Style.id == style_id))
