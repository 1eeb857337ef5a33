"""Pure ASGI middleware: API-key authentication, before any routing (and before any body is
read: gateway/bodies.py runs after it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.accounts import authentication
from core.accounts.callers import CallerCache, KnownKey
from core.clock import utcnow
from core.db import DATABASE_UNAVAILABLE, Database
from gateway.errors import (
    ApiError,
    database_unavailable,
    error_response,
    unauthorized,
)

API_PREFIX = "/v1"
T = TypeVar("T")
PUBLIC_PATHS = {"/v1/openapi.json"}


async def _short_read(db: Database, read: Callable[[], T]) -> T:
    """A short indexed read: inline on SQLite (tens of microseconds, and WAL readers are never
    blocked by writers), in a worker thread on a database across the network."""
    if db.is_sqlite:
        return read()
    return await anyio.to_thread.run_sync(read)


async def _send_error(send: Send, error: ApiError) -> None:
    response = error_response(error)
    await response({"type": "http"}, _empty_receive, send)


async def _empty_receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def presented_key(headers: list[tuple[bytes, bytes]]) -> str | None:
    """`x-api-key` wins over `Authorization: Bearer` when both are sent. Either one sent twice
    presents no key: a proxy reading the first and this service the last would disagree on who
    is calling."""
    api_keys = [value for name, value in headers if name == b"x-api-key"]
    authorizations = [value for name, value in headers if name == b"authorization"]
    if len(api_keys) > 1 or len(authorizations) > 1:
        return None
    if api_keys:
        return api_keys[0].decode("latin-1").strip()
    if authorizations:
        authorization = authorizations[0]
        scheme, _, token = authorization.decode("latin-1").strip().partition(" ")
        if scheme.lower() == "bearer":
            return token.strip()
    return None


class AuthMiddleware:
    """Every `/v1` path but the OpenAPI document needs a usable key; the caller goes into
    `scope["state"]["caller"]`. Runs before routing so an anonymous caller learns nothing.
    Keys are looked up in the gateway's `CallerCache` first, in the database on a miss."""

    def __init__(self, app: ASGIApp, db: Database, callers: CallerCache) -> None:
        self.app = app
        self.db = db
        self.callers = callers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(API_PREFIX) or path in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        key_hash = authentication.key_hash_of(presented_key(scope["headers"]))
        if key_hash is None:
            await _send_error(send, unauthorized())
            return
        db = self.db
        callers = self.callers
        known = callers.get(key_hash)
        try:
            if known is None:
                generation = callers.generation
                known = await _short_read(db, lambda: authentication.known_key(db, key_hash))
                if known is not None:
                    callers.store(key_hash, known, generation)
            now = utcnow()
            identified = authentication.judge(known, now)
            if identified is None:
                await _send_error(send, unauthorized())
                return
            if identified.use_unrecorded:
                assert known is not None
                await self._record_use(known, now)
        except DATABASE_UNAVAILABLE:
            # Outside the app's exception handlers (this runs before routing).
            await _send_error(send, database_unavailable())
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        state["caller"] = identified.caller
        await self.app(scope, receive, send)

    async def _record_use(self, known: KnownKey, now: datetime) -> None:
        """A write: never inline on the event loop, where a busy SQLite would stall it. Marked
        first, so the requests arriving meanwhile with a cached key do not write it again."""
        previous = known.last_used_at
        known.last_used_at = now
        try:
            await anyio.to_thread.run_sync(authentication.record_use, self.db, known.key_id, now)
        except BaseException:
            known.last_used_at = previous
            raise
