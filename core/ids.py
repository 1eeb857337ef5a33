"""Identifiers: UUID version 7 (time-ordered, so keyset cursors and indexes stay local)."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def uuid7() -> uuid.UUID:
    """A UUIDv7 (RFC 9562) with a 12-bit counter for ordering within one millisecond."""
    global _last_ms, _counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
            now_ms = _last_ms
        else:
            _last_ms = now_ms
            _counter = int.from_bytes(os.urandom(2), "big") & 0x3FF
        counter = _counter
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (now_ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= rand_b
    return uuid.UUID(int=value)


def new_id() -> str:
    return str(uuid7())


# A UUID string as `str(UUID)` writes it, as clients send back the ids they were given.
CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def parse_uuid(value: str) -> str | None:
    """The canonical form of a UUID string, or None when it is not one."""
    if isinstance(value, str) and CANONICAL_UUID.fullmatch(value):
        return value  # already canonical (what every job read's path carries): no UUID built
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None
