"""SQL for saved brand styles."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from core.models import Style


def add(session: Session, style: Style) -> None:
    session.add(style)


def get_owned(session: Session, style_id: str, account_id: str) -> Style | None:
    return session.scalars(
        select(Style).where(Style.id == style_id, Style.account_id == account_id)
    ).first()


def page(
    session: Session, account_id: str, after: tuple[datetime, str] | None, limit: int
) -> Sequence[Style]:
    """Newest first, keyset on (created_at, id), like the job list."""
    query = select(Style).where(Style.account_id == account_id)
    if after is not None:
        created_at, style_id = after
        query = query.where(
            or_(
                Style.created_at < created_at,
                and_(Style.created_at == created_at, Style.id < style_id),
            )
        )
    return session.scalars(
        query.order_by(Style.created_at.desc(), Style.id.desc()).limit(limit)
    ).all()
