"""Refusing the NUL character in any string a request sends (JSON body or query): PostgreSQL's
text cannot hold it, so without this check the same request is a 400 on SQLite and a 500 on
PostgreSQL. One check here covers every field of every route, present and future."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.bodies import BODY_KEY
from gateway.errors import ApiError, error_response, field_path

REASON = "must not contain the NUL character (\\u0000)"
BODILESS = ("GET", "HEAD", "DELETE", "OPTIONS")


def _walk(value: Any, location: tuple[Any, ...], found: dict[str, str]) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            found[field_path(("body", *location))] = REASON
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, (*location, index), found)
    elif isinstance(value, dict):
        for name, item in value.items():
            if "\x00" in name:
                found[field_path(("body", *location, name))] = REASON
            _walk(item, (*location, name), found)


def nul_fields(body: bytes, query_string: bytes) -> dict[str, str]:
    """Field path -> reason for every string holding NUL; cheap when there is none (JSON can
    only carry it escaped, a query only percent-encoded)."""
    found: dict[str, str] = {}
    if b"%00" in query_string:
        for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                found[name.replace("\x00", "")] = REASON
    if b"\\u0000" in body:
        try:
            document = json.loads(body)
        except ValueError:
            return found  # not JSON: the route's own validation says so
        _walk(document, (), found)
    return found


class NulCharacterMiddleware:
    """After authentication, rate limiting and the body's bounded read (gateway/bodies.py, which
    keeps the body it read in the scope), before routing: a 400 naming each field."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("state", {}).get("caller") is None:
            await self.app(scope, receive, send)
            return
        if scope["method"] in BODILESS and b"%00" not in scope.get("query_string", b""):
            await self.app(scope, receive, send)  # the hot reads pass untouched
            return
        body = scope.get(BODY_KEY, b"")
        found = nul_fields(body, scope.get("query_string", b""))
        if found:
            refusal = ApiError(400, "VALIDATION_ERROR", "Invalid request", details=found)
            await error_response(refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)
