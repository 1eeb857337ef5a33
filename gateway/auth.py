"""The authenticated caller, as the auth middleware left it on the request."""

from __future__ import annotations

from fastapi import Request

from core.accounts.service import Caller
from gateway.errors import unauthorized


async def current_caller(request: Request) -> Caller:
    caller = getattr(request.state, "caller", None)
    if not isinstance(caller, Caller):
        raise unauthorized()
    return caller
