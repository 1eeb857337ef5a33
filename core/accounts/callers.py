"""The callers of recently seen keys, by key hash, so that most requests are authenticated
without a database read.

Trusted only while the event bus brings every credential change of the deployment to this
process (`JobEvents.receives_every_change`: a Redis bus, subscribed; or, embedded, the marker
file beside the SQLite database): every change of a key or an account publishes a credential
event after its commit (`core/accounts/service.py`), which clears this cache on every gateway
before any request sent after the change can be read. So does each (re)subscription of the
Redis bus, as events may have been missed while it was down. A lookup that
began before a clear is not stored (the generation moved on), so a read racing a revocation
cannot put the old state back. Expiry needs no event: the expiry time is cached and checked on
every request.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from core.events import JobEvents

# Bounds the memory of a gateway that sees many keys; a full cache starts afresh.
MAX_ENTRIES = 100_000


@dataclass(slots=True)
class KnownKey:
    """A key's row as authentication needs it, and the account it acts for."""

    key_id: str
    state: str
    expires_at: datetime | None
    last_used_at: datetime | None
    account_id: str
    email: str
    plan_id: str


class CallerCache:
    def __init__(self, events: JobEvents) -> None:
        self._events = events
        self._entries: dict[str, KnownKey] = {}
        self._lock = threading.Lock()
        self.generation = 0
        events.on_credentials_changed(self.clear)

    def get(self, key_hash: str) -> KnownKey | None:
        if not self._events.receives_every_change():
            return None
        return self._entries.get(key_hash)

    def store(self, key_hash: str, known: KnownKey, generation: int) -> None:
        """Keep what a lookup that began at `generation` found, unless a change came since."""
        # First: a change it takes in moves the generation on.
        if not self._events.receives_every_change():
            return
        with self._lock:
            if generation != self.generation:
                return
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[key_hash] = known

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()
