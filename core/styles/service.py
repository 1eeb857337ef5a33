"""Saved brand styles: reading them, and what one lends a generation."""

from __future__ import annotations

from typing import Any

from core.db import Database
from core.models import Style
from core.pagination import decode_cursor, page_of
from core.styles import repository


def get_owned(db: Database, account_id: str, style_id: str) -> Style | None:
    with db.read() as session:
        return repository.get_owned(session, style_id, account_id)


def list_page(
    db: Database, account_id: str, cursor: str | None, limit: int
) -> tuple[list[Style], str | None]:
    """One page and the cursor of the next (None on the last page). Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        return page_of(list(repository.page(session, account_id, after, limit + 1)), limit)


def palette_of(style: Style) -> list[str]:
    """The style's solid colours, in their order of importance."""
    return [item["hex"] for item in style.colours if item.get("type") == "solid"]


def generation_hints(style: Style) -> dict[str, Any]:
    """What a generation takes from a style (kept in the job's inputs, so the job stands alone
    if the style changes later): palette (solids, then gradient stops), tone, aesthetic."""
    gradient_stops = [
        stop["hex"]
        for item in style.colours
        if item.get("type") == "gradient"
        for stop in item.get("stops", [])
    ]
    return {
        "styleId": style.id,
        "palette": palette_of(style) + gradient_stops,
        "tone": list(style.tone),
        "aesthetic": style.aesthetic,
    }
