"""Time in one place: aware UTC datetimes and the API's ISO 8601 millisecond format."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat_ms(moment: datetime) -> str:
    """`2026-11-22T10:04:05.123Z`."""
    if moment.tzinfo is not None and moment.utcoffset():
        moment = moment.astimezone(UTC)
    # isoformat, not strftime: a job read formats one on every poll, and strftime took 4 us.
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
