"""Admin (accounts marked by `sfumato accounts set-admin`): every account with its plan and
balance, change a plan, grant credits with a reason; the CLI's own service functions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from core.accounts import service as accounts
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PageSize,
    PostedDep,
    error_page,
    form_whole,
    see_other,
)

router = APIRouter(route_class=DashboardRoute)
PAGE_SIZE = 24
DONE = {"plan": "The plan was changed.", "credit": "The credits were granted."}


def _admin_page(
    page: Page,
    status: int = 200,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
    **context: Any,
) -> Response:
    if not page.user.is_admin:
        return error_page(
            page.request, 403, "Admins only", "This page is for administrators.", page.user
        )
    listed, next_cursor = accounts.accounts_page(page.services.db, cursor, limit)
    return page.render(
        "admin.html",
        status,
        nav="admin",
        accounts=listed,
        plans=sorted(page.services.config.plans),
        cursor=cursor,
        next_cursor=next_cursor,
        limit=limit,
        **context,
    )


@router.get("/admin")
def admin_page(
    page: PageDep,
    done: Annotated[str, Query(max_length=16)] = "",
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: PageSize = PAGE_SIZE,
) -> Response:
    return _admin_page(page, cursor=cursor, limit=limit, notice=DONE.get(done))


@router.post("/admin/plan")
def set_plan(page: PostedDep) -> Response:
    if not page.user.is_admin:
        return _admin_page(page)
    try:
        accounts.set_plan(
            page.services.db, page.services.events, page.field("email"), page.field("plan")
        )
    except accounts.AccountError as error:
        return _admin_page(page, 400, message=str(error))
    return see_other(f"{PREFIX}/admin?done=plan")


@router.post("/admin/credit")
def grant_credits(page: PostedDep) -> Response:
    if not page.user.is_admin:
        return _admin_page(page)
    amount = form_whole(page.field("amount"))
    if amount is None:
        return _admin_page(page, 400, message="The amount must be a positive whole number.")
    try:
        accounts.grant_credits(page.services.db, page.field("email"), amount, page.field("reason"))
    except accounts.AccountError as error:
        return _admin_page(page, 400, message=str(error))
    return see_other(f"{PREFIX}/admin?done=credit")
