"""Running a short database read from async code without a thread hop where none is needed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

from core.db import Database

T = TypeVar("T")


async def run_read(db: Database, read: Callable[[], T]) -> T:
    """A short indexed read: inline on SQLite (tens of microseconds, and WAL readers are never
    blocked by writers), in a worker thread on a database across the network."""
    if db.is_sqlite:
        return read()
    return await anyio.to_thread.run_sync(read)
