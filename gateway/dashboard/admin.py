"""Admin (accounts marked by `sfumato accounts set-admin`): every account with its plan and
balance, change a plan, grant credits with a reason, add a person (with a password, or by a
one-time invitation link that lets them set it); the CLI's own service functions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from core.accounts import invitations, passwords
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
from gateway.dependencies import public_base_url

router = APIRouter(route_class=DashboardRoute)
PAGE_SIZE = 24
DONE = {
    "plan": "The plan was changed.",
    "credit": "The credits were granted.",
    "created": "The account was created: its owner can sign in with the password you chose.",
}


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


def _new_account_fields(page: Page) -> tuple[str, str, int] | str:
    """The add-a-person form's email, plan and credits; or why they cannot be used."""
    credits = page.field("credits") or "0"
    if not credits.isdigit():
        return "The credits must be a whole number, 0 or more."
    return page.field("email"), page.field("plan"), int(credits)


@router.post("/admin/accounts")
def create_account(page: PostedDep) -> Response:
    """A new account whose owner signs in with the password the admin chose."""
    if not page.user.is_admin:
        return _admin_page(page)
    fields = _new_account_fields(page)
    if isinstance(fields, str):
        return _admin_page(page, 400, add_message=fields, add_values=page.form)
    try:
        passwords.create_with_password(page.services.db, *fields, page.raw("password"))
    except accounts.AccountError as error:
        return _admin_page(page, 400, add_message=str(error), add_values=page.form)
    return see_other(f"{PREFIX}/admin?done=created")


@router.post("/admin/invitations")
def invite(page: PostedDep) -> Response:
    """A new account and its one-time link, shown here once, for the admin to hand over."""
    if not page.user.is_admin:
        return _admin_page(page)
    fields = _new_account_fields(page)
    if isinstance(fields, str):
        return _admin_page(page, 400, add_message=fields, add_values=page.form)
    try:
        invited = invitations.invite(page.services.db, *fields)
    except accounts.AccountError as error:
        return _admin_page(page, 400, add_message=str(error), add_values=page.form)
    link = f"{public_base_url(page.request).rstrip('/')}{PREFIX}/invitations/{invited.token}"
    return _admin_page(page, 201, invited=invited, invitation_link=link)
