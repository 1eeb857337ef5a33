"""Signing in and out, changing one's password, and the invitation link that sets a new
account's password and signs its owner in.

The sign-in form is protected against cross-site posts by a double-submit token (a cookie and a
hidden field that must match), since there is no session yet to hold a CSRF token, and its post
must come from the dashboard's own origin. Guesses are limited by the gateway's SignInThrottle
(gateway/limits.py); a wrong password and an unknown email get the same answer."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request, Response

from core.accounts import invitations, passwords
from core.accounts import service as accounts
from core.sessions import service as sessions
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    PageDep,
    PostedDep,
    clear_session_cookie,
    client_address,
    cookie_name,
    delete_cookie,
    read_form,
    render,
    runtime_of,
    safe_next,
    same_origin,
    see_other,
    session_token,
    set_cookie,
    set_session_cookie,
)

router = APIRouter(route_class=DashboardRoute)
SIGNIN_COOKIE = "sfumato_signin"
WRONG_CREDENTIALS = "That email and password do not match an account."


def _sign_in_form(
    request: Request, next_path: str, email: str = "", message: str = "", status: int = 200
) -> Response:
    token = request.cookies.get(cookie_name(request, SIGNIN_COOKIE)) or secrets.token_urlsafe(24)
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
    set_cookie(request, response, SIGNIN_COOKIE, token, samesite="strict")
    return response


@router.get("/sign-in")
def sign_in_page(
    request: Request, next_path: Annotated[str, Query(alias="next", max_length=2048)] = ""
) -> Response:
    return _sign_in_form(request, safe_next(next_path))


def _too_many(request: Request, next_path: str, email: str, wait: int) -> Response:
    response = _sign_in_form(
        request,
        next_path,
        email,
        f"Too many sign-in attempts. Try again in {wait} seconds.",
        429,
    )
    response.headers["Retry-After"] = str(wait)
    return response


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    form = await read_form(request)
    email = str(form.get("email") or "").strip().lower()[:320]
    password = str(form.get("password") or "")
    next_path = safe_next(str(form.get("next") or ""))
    cookie_token = request.cookies.get(cookie_name(request, SIGNIN_COOKIE))
    if (
        not same_origin(request)
        or not cookie_token
        or not secrets.compare_digest(cookie_token, str(form.get("signin_token")))
    ):
        return _sign_in_form(
            request, next_path, email, "The form expired. Please sign in again.", 403
        )
    runtime = runtime_of(request)
    throttle = runtime.limiter.signin
    address = client_address(request)
    wait = await anyio.to_thread.run_sync(throttle.admit, email, address)
    if wait:
        return _too_many(request, next_path, email, wait)
    db = runtime.services.db
    account = await anyio.to_thread.run_sync(passwords.check_password, db, email, password)
    if account is None:
        await anyio.to_thread.run_sync(throttle.failed, email, address)
        return _sign_in_form(request, next_path, email, WRONG_CREDENTIALS, 401)
    absolute = timedelta(hours=runtime.services.settings.session_absolute_hours)
    started = await anyio.to_thread.run_sync(sessions.start, db, account.id, absolute)
    response = see_other(next_path)
    set_session_cookie(request, response, started.token)
    delete_cookie(request, response, SIGNIN_COOKIE)
    return response


def _invitation_form(
    request: Request, token: str, email: str, message: str = "", status: int = 200
) -> Response:
    return render(
        request, "invitation.html", status, user=None, token=token, email=email, message=message
    )


def _invitation_not_valid(request: Request) -> Response:
    return render(
        request,
        "error.html",
        404,
        title="This invitation link is not valid",
        message="It was used already, or it expired. Ask your administrator for a new one.",
        back=f"{PREFIX}/sign-in",
    )


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
    settings = runtime_of(request).services.settings
    absolute = timedelta(hours=settings.session_absolute_hours)
    started = await anyio.to_thread.run_sync(sessions.start, db, account.id, absolute)
    response = see_other(f"{PREFIX}/jobs")
    set_session_cookie(request, response, started.token)
    return response


@router.post("/sign-out")
def sign_out(page: PostedDep) -> Response:
    token = session_token(page.request)
    if token:
        sessions.end(page.services.db, token)
    response = see_other(f"{PREFIX}/sign-in")
    clear_session_cookie(page.request, response)
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
    # The current password is a guess like a sign-in's (a session left open is not the
    # password): the same limits count it.
    throttle = page.runtime.limiter.signin
    email, address = page.user.email, client_address(page.request)
    wait = throttle.admit(email, address)
    if wait:
        refused = page.render(
            "account.html",
            429,
            nav="account",
            message=f"Too many attempts. Try again in {wait} seconds.",
        )
        refused.headers["Retry-After"] = str(wait)
        return refused
    try:
        passwords.change_password(page.services.db, page.user.account_id, page.raw("current"), new)
    except passwords.WrongPassword as error:
        throttle.failed(email, address)
        return page.render("account.html", 400, nav="account", message=str(error))
    except accounts.AccountError as error:
        return page.render("account.html", 400, nav="account", message=str(error))
    response = see_other(f"{PREFIX}/sign-in")
    clear_session_cookie(page.request, response)
    return response
