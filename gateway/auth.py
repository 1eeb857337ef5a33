"""The authenticated caller, as the auth middleware left it on the request."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from core.accounts.service import Caller
from gateway.errors import unauthorized


async def current_caller(request: Request) -> Caller:
    caller = getattr(request.state, "caller", None)
    if not isinstance(caller, Caller):
        raise unauthorized()
    return caller


CallerDep = Annotated[Caller, Depends(current_caller)]
