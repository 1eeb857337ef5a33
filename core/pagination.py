"""The one keyset-pagination helper: opaque cursors over (created_at, id), newest first, and the
query that reads a page of them."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import Session

from core.errors import InvalidInput
from core.ids import parse_uuid


class BadCursor(InvalidInput):
    def __init__(self) -> None:
        super().__init__({"cursor": "is not a cursor this service issued"})


def encode_cursor(created_at: datetime, item_id: str) -> str:
    raw = f"{created_at.isoformat()}|{item_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, _, item_id = raw.partition("|")
        created_at = datetime.fromisoformat(moment)
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise BadCursor() from error
    canonical = parse_uuid(item_id)
    if canonical is None or created_at.tzinfo is None:
        raise BadCursor()
    return created_at, canonical


class Keyed(Protocol):
    created_at: datetime
    id: str


K = TypeVar("K", bound=Keyed)


def page_of(rows: list[K], limit: int) -> tuple[list[K], str | None]:
    """A page from `limit + 1` rows read newest first, and the cursor of the next page (None
    on the last): the extra row only says whether there is more."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1].created_at, rows[-1].id)


def newest_first(
    session: Session,
    query: Select[Any],
    model: Any,
    after: tuple[datetime, str] | None,
    limit: int,
) -> Sequence[Any]:
    """`query`'s rows of `model` newest first, from just after `after` (a decoded cursor), at
    most `limit`: keyset on (created_at, id), like the job list."""
    if after is not None:
        created_at, row_id = after
        query = query.where(
            or_(
                model.created_at < created_at,
                and_(model.created_at == created_at, model.id < row_id),
            )
        )
    return session.scalars(
        query.order_by(model.created_at.desc(), model.id.desc()).limit(limit)
    ).all()
