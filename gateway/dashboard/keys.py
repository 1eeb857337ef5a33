"""The keys page: create (the plaintext shown once), rename, deactivate / activate, revoke;
through `core/accounts/service.py`, as `sfumato keys` does."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from core.accounts import api_keys
from core.accounts import service as accounts
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PageSize,
    PostedDep,
    form_whole,
    see_other,
)

router = APIRouter(route_class=DashboardRoute)
PAGE_SIZE = 24
DONE = {
    "renamed": "The key was renamed.",
    "deactivated": "The key is deactivated: requests with it are refused until you activate it.",
    "active": "The key is active again.",
    "revoked": "The key is revoked for good.",
}


def _keys_page(
    page: Page,
    status: int = 200,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
    **context: object,
) -> Response:
    keys, next_cursor = api_keys.keys_page(page.services.db, page.user.account_id, cursor, limit)
    return page.render(
        "keys.html",
        status,
        nav="keys",
        keys=keys,
        cursor=cursor,
        next_cursor=next_cursor,
        limit=limit,
        **context,
    )


@router.get("/keys")
def keys_page(
    page: PageDep,
    done: Annotated[str, Query(max_length=16)] = "",
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: PageSize = PAGE_SIZE,
) -> Response:
    return _keys_page(page, cursor=cursor, limit=limit, notice=DONE.get(done))


@router.post("/keys")
def create_key(page: PostedDep) -> Response:
    name = page.field("name")
    expiry = page.field("expires_in_days")
    days: int | None = None
    if expiry:
        days = form_whole(expiry)
        if days is None or not 1 <= days <= 3650:
            return _keys_page(
                page,
                400,
                message="Expiry must be a whole number of days from 1 to 3650.",
                form_name=name,
                form_expiry=expiry,
            )
    try:
        new = api_keys.create_key(page.services.db, page.user.email, name, days)
    except accounts.AccountError as error:
        return _keys_page(page, 400, message=str(error), form_name=name, form_expiry=expiry)
    return _keys_page(page, 201, created=new)


@router.post("/keys/{key_id}/rename")
def rename_key(page: PostedDep, key_id: str) -> Response:
    try:
        api_keys.rename_key(page.services.db, key_id, page.field("name"), page.user.account_id)
    except accounts.AccountError as error:
        return _keys_page(page, 400, message=str(error))
    return see_other(f"{PREFIX}/keys?done=renamed")


@router.post("/keys/{key_id}/state")
def set_key_state(page: PostedDep, key_id: str) -> Response:
    state = page.field("state")
    if state == "revoked" and page.field("confirm") != "yes":
        return _keys_page(page, 400, message="Tick the box to confirm the revocation.")
    try:
        key = api_keys.set_key_state(
            page.services.db, page.services.events, key_id, state, page.user.account_id
        )
    except accounts.AccountError as error:
        return _keys_page(page, 400, message=str(error))
    return see_other(f"{PREFIX}/keys?done={key.state}")
