"""Signing in and out, changing one's password, and the invitation link that sets a new
account's password and signs its owner in.

The sign-in form is protected against cross-site posts by a double-submit token (a cookie and a
hidden field that must match), since there is no session yet to hold a CSRF token. Attempts are
counted per email and per client address with the gateway's rate limiter; a wrong password and
an unknown email get the same answer."""

from __future__ import annotations

import secrets
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request, Response

from core.accounts import invitations, passwords
from core.accounts import service as accounts
from core.sessions import service as sessions
from gateway.dashboard.web import (
    PREFIX,
    SESSION_COOKIE,
    DashboardRoute,
    PageDep,
    PostedDep,
    clear_session_cookie,
    client_address,
    cookie_secure,
    read_form,
    render,
    runtime_of,
    safe_next,
    see_other,
    set_session_cookie,
)

router = APIRouter(route_class=DashboardRoute)
SIGNIN_COOKIE = "sfumato_signin"
WRONG_CREDENTIALS = "That email and password do not match an account."


def _sign_in_form(
    request: Request, next_path: str, email: str = "", message: str = "", status: int = 200
) -> Response:
    token = request.cookies.get(SIGNIN_COOKIE) or secrets.token_urlsafe(24)
    response = render(
        request,
        "sign_in.html",
        status,
        user=None,
        signin_token=token,
        next=next_path,
        email=email,
        message=message,
    )
    response.set_cookie(
        SIGNIN_COOKIE,
        token,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=cookie_secure(request),
    )
    return response


@router.get("/sign-in")
def sign_in_page(
    request: Request, next_path: Annotated[str, Query(alias="next", max_length=2048)] = ""
) -> Response:
    return _sign_in_form(request, safe_next(next_path))


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    form = await read_form(request)
    email = str(form.get("email") or "").strip().lower()[:320]
    password = str(form.get("password") or "")
    next_path = safe_next(str(form.get("next") or ""))
    cookie_token = request.cookies.get(SIGNIN_COOKIE)
    if not cookie_token or not secrets.compare_digest(cookie_token, str(form.get("signin_token"))):
        return _sign_in_form(
            request, next_path, email, "The form expired. Please sign in again.", 403
        )
    runtime = runtime_of(request)
    limiter = runtime.limiter
    for subject in (f"email:{email}", f"address:{client_address(request)}"):
        decision = await anyio.to_thread.run_sync(limiter.hit, "signin", subject)
        if not decision.allowed:
            response = _sign_in_form(
                request,
                next_path,
                email,
                f"Too many sign-in attempts. Try again in {decision.reset_seconds} seconds.",
                429,
            )
            response.headers["Retry-After"] = str(decision.reset_seconds)
            return response
    db = runtime.services.db
    account = await anyio.to_thread.run_sync(passwords.check_password, db, email, password)
    if account is None:
        return _sign_in_form(request, next_path, email, WRONG_CREDENTIALS, 401)
    started = await anyio.to_thread.run_sync(sessions.start, db, account.id)
    response = see_other(next_path)
    set_session_cookie(request, response, started.token)
    response.delete_cookie(SIGNIN_COOKIE, path=PREFIX)
    return response


def _invitation_form(
    request: Request, token: str, email: str, message: str = "", status: int = 200
) -> Response:
    response = render(
        request, "invitation.html", status, user=None, token=token, email=email, message=message
    )
    # The link's secret must not travel on to another site in a Referer.
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _invitation_not_valid(request: Request) -> Response:
    response = render(
        request,
        "error.html",
        404,
        title="This invitation link is not valid",
        message="It was used already, or it expired. Ask your administrator for a new one.",
        back=f"{PREFIX}/sign-in",
    )
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@router.get("/invitations/{token}")
def invitation_page(request: Request, token: str) -> Response:
    account = invitations.invited_account(runtime_of(request).services.db, token)
    if account is None:
        return _invitation_not_valid(request)
    return _invitation_form(request, token, account.email)


@router.post("/invitations/{token}")
async def accept_invitation(request: Request, token: str) -> Response:
    """The link's own secret is what this form proves it came from (there is no session yet);
    it works once."""
    form = await read_form(request)
    password = str(form.get("password") or "")
    db = runtime_of(request).services.db
    account = await anyio.to_thread.run_sync(invitations.invited_account, db, token)
    if account is None:
        return _invitation_not_valid(request)
    if password != str(form.get("repeat") or ""):
        return _invitation_form(request, token, account.email, "The two passwords differ.", 400)
    try:
        account = await anyio.to_thread.run_sync(invitations.accept, db, token, password)
    except invitations.InvitationNotValid:
        return _invitation_not_valid(request)
    except accounts.AccountError as error:
        return _invitation_form(request, token, account.email, str(error), 400)
    started = await anyio.to_thread.run_sync(sessions.start, db, account.id)
    response = see_other(f"{PREFIX}/jobs")
    set_session_cookie(request, response, started.token)
    return response


@router.post("/sign-out")
def sign_out(page: PostedDep) -> Response:
    token = page.request.cookies.get(SESSION_COOKIE)
    if token:
        sessions.end(page.services.db, token)
    response = see_other(f"{PREFIX}/sign-in")
    clear_session_cookie(response)
    return response


@router.get("/account")
def account_page(page: PageDep) -> Response:
    return page.render("account.html", nav="account")


@router.post("/account/password")
def change_password(page: PostedDep) -> Response:
    new = page.raw("new")
    if new != page.raw("repeat"):
        return page.render(
            "account.html", 400, nav="account", message="The two new passwords differ."
        )
    try:
        passwords.change_password(page.services.db, page.user.account_id, page.raw("current"), new)
    except accounts.AccountError as error:
        return page.render("account.html", 400, nav="account", message=str(error))
    response = see_other(f"{PREFIX}/sign-in")
    clear_session_cookie(response)
    return response
