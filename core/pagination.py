"""The one keyset-pagination helper: opaque cursors over (created_at, id), newest first."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Protocol, TypeVar

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
