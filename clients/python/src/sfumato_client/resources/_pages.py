"""Cursor pagination (`data` + `nextCursor`), followed page after page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from sfumato_client._transport import AsyncTransport, SyncTransport

MAX_PAGE_SIZE = 50


def _params(
    filters: dict[str, Any], limit: int | None, page_size: int, yielded: int, cursor: str | None
) -> dict[str, Any]:
    if limit is not None:
        page_size = max(1, min(page_size, limit - yielded))
    params = {name: value for name, value in filters.items() if value is not None}
    params["limit"] = page_size
    if cursor is not None:
        params["cursor"] = cursor
    return params


def pages(
    transport: SyncTransport,
    path: str,
    filters: dict[str, Any],
    limit: int | None,
    page_size: int = MAX_PAGE_SIZE,
) -> Iterator[dict[str, Any]]:
    """The items of every page (`page_size` a request), at most `limit` of them (all when
    None)."""
    cursor: str | None = None
    yielded = 0
    while True:
        page = transport.request(
            "GET", path, params=_params(filters, limit, page_size, yielded, cursor)
        )
        for item in page["data"]:
            yield item
            yielded += 1
            if limit is not None and yielded >= limit:
                return
        cursor = page.get("nextCursor")
        if not cursor:
            return


async def async_pages(
    transport: AsyncTransport,
    path: str,
    filters: dict[str, Any],
    limit: int | None,
    page_size: int = MAX_PAGE_SIZE,
) -> AsyncIterator[dict[str, Any]]:
    cursor: str | None = None
    yielded = 0
    while True:
        params = _params(filters, limit, page_size, yielded, cursor)
        page = await transport.request("GET", path, params=params)
        for item in page["data"]:
            yield item
            yielded += 1
            if limit is not None and yielded >= limit:
                return
        cursor = page.get("nextCursor")
        if not cursor:
            return
