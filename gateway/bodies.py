"""Request bodies, bounded on every route before anything reads them, in size and in time.

Every body has a limit by route (`BodyLimits.of`): the API's JSON bodies (`SFUMATO_MAX_BODY_BYTES`,
64 KiB) and every small form (16 KiB) are read whole here, then replayed to the app
(`replaying`, the one way a body read ahead is given back) and kept in the scope for the NUL
check; the two routes that take a file (local storage's upload PUT, the dashboard's upload form)
are counted as the route streams them, up to the image limit plus a margin. A `Content-Length`
over the limit is refused before a byte is read (413), a streamed body is cut where it passes it.

In time: a small body must arrive whole within `SFUMATO_BODY_TIMEOUT_SECONDS`; a file must keep
an average of `SFUMATO_MIN_BODY_BYTES_PER_SECOND` once that much time has passed. A body too
slow is answered 408 and its connection closed, so connections trickling bodies cannot hold the
server's concurrency for long. A client that goes away before its body ends is logged at debug
level: it is not the server's error.

This runs after authentication and rate limiting (`gateway/app.py`): a request without a valid
key is refused before its body is read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.settings import Settings
from core.storage.local import FILES_ROUTE
from gateway.errors import ApiError, error_response

log = logging.getLogger(__name__)

# Where a body read ahead is kept for the checks after this one (the NUL check).
BODY_KEY = "sfumato.body"
SMALL_FORM_BYTES = 16 * 1024
# A file's form or PUT carries a little more than the file: multipart headers, the CSRF token.
FILE_MARGIN_BYTES = 64 * 1024
FILE_ROUTES = (("PUT", FILES_ROUTE + "/"), ("POST", "/dashboard/uploads"))


class BodyRefused(ApiError):
    """A body over its limit (413) or too slow (408), raised into the route that streams it."""


# The rest of a refused body is not read: the connection ends with the answer.
CLOSE = {"Connection": "close"}


def too_large(limit: int) -> BodyRefused:
    message = f"Request body larger than {limit} bytes"
    return BodyRefused(413, "PAYLOAD_TOO_LARGE", message, headers=CLOSE)


def too_slow() -> BodyRefused:
    message = "The request body did not arrive in time"
    return BodyRefused(408, "REQUEST_TIMEOUT", message, headers=CLOSE)


@dataclass(frozen=True)
class BodyLimit:
    max_bytes: int
    # Read whole here (small bodies), or counted as the route streams it (files).
    read_ahead: bool


@dataclass(frozen=True)
class BodyLimits:
    api_bytes: int
    file_bytes: int
    timeout_seconds: float
    min_bytes_per_second: int

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyLimits:
        return cls(
            api_bytes=settings.max_body_bytes,
            file_bytes=settings.max_image_bytes + FILE_MARGIN_BYTES,
            timeout_seconds=settings.body_timeout_seconds,
            min_bytes_per_second=settings.min_body_bytes_per_second,
        )

    def of(self, method: str, path: str) -> BodyLimit:
        if any(method == verb and path.startswith(route) for verb, route in FILE_ROUTES):
            return BodyLimit(self.file_bytes, read_ahead=False)
        if path.startswith("/v1/"):
            return BodyLimit(self.api_bytes, read_ahead=True)
        return BodyLimit(SMALL_FORM_BYTES, read_ahead=True)


def replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` for an app whose body was read ahead: the body once, then the connection's
    own messages (a disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _declared_length(scope: Scope) -> tuple[int | None, bool]:
    """The `Content-Length` (None when absent or not a number) and whether a body comes."""
    declared: bytes | None = None
    chunked = False
    for name, value in scope["headers"]:
        if name == b"content-length":
            declared = value
        elif name == b"transfer-encoding":
            chunked = True
    length = int(declared) if declared is not None and declared.isdigit() else None
    return length, chunked or (declared is not None and declared != b"0")


class RequestBodyMiddleware:
    def __init__(self, app: ASGIApp, limits: BodyLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length, has_body = _declared_length(scope)
        if not has_body:
            await self.app(scope, receive, send)
            return
        limit = self.limits.of(scope["method"], scope["path"])
        if length is not None and length > limit.max_bytes:
            await error_response(too_large(limit.max_bytes))(scope, receive, send)
            return
        if not limit.read_ahead:
            await self.app(scope, self._counted(receive, limit.max_bytes), send)
            return
        try:
            body = await self._read_whole(receive, limit.max_bytes)
        except BodyRefused as refusal:
            await error_response(refusal)(scope, receive, send)
            return
        if body is None:
            log.debug("%s %s: the client went away before its body ended", *_request(scope))
            return
        scope[BODY_KEY] = body
        await self.app(scope, replaying(body, receive), send)

    async def _read_whole(self, receive: Receive, max_bytes: int) -> bytes | None:
        """The body, or None when the client went away first. Raises BodyRefused."""
        deadline = time.monotonic() + self.limits.timeout_seconds
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await _within(receive, deadline)
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > max_bytes:
                raise too_large(max_bytes)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _counted(self, receive: Receive, max_bytes: int) -> Receive:
        """`receive` for a route that streams a file: it raises BodyRefused into the route
        once the body passes `max_bytes`, or falls under the minimum rate."""
        started = time.monotonic()
        size = 0
        grace = self.limits.timeout_seconds
        rate = self.limits.min_bytes_per_second

        async def counted() -> Message:
            nonlocal size
            # By now the body must have come at `rate` on average, after the first `grace`.
            deadline = started + max(grace, (size + 1) / rate)
            message = await _within(receive, deadline)
            size += len(message.get("body", b""))
            if size > max_bytes:
                raise too_large(max_bytes)
            return message

        return counted


async def _within(receive: Receive, deadline: float) -> Message:
    try:
        return await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0))
    except TimeoutError:
        raise too_slow() from None


def _request(scope: Scope) -> tuple[str, str]:
    return scope.get("method", ""), scope.get("path", "")
