"""What every dashboard page shares: templates, the session cookie, the CSRF check, and a route
class that turns refusals into a page (never a trace) and a missing session into the sign-in."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

import anyio
import redis
from fastapi import Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from core.accounts import authentication
from core.accounts.service import Caller
from core.db import DATABASE_UNAVAILABLE
from core.errors import DomainError
from core.pagination import BadCursor
from core.sessions import service as sessions
from core.sessions.service import SignedIn
from gateway.errors import validation_details
from gateway.limits import bucket_of
from gateway.runtime import Gateway

log = logging.getLogger(__name__)

PREFIX = "/dashboard"
SESSION_COOKIE = "sfumato_session"
TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
STATIC_DIR = Path(__file__).parent / "static"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
# A list page's size: the bounds of the API's list endpoints (SPEC.md: 1 to 50).
PageSize = Annotated[int, Query(ge=1, le=50)]


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment is not None else "never"


TEMPLATES.env.filters["when"] = _when
# Templates ship with the package: never re-check their files on disk (an include per card
# would stat the file once per card).
TEMPLATES.env.auto_reload = False


class SignInRequired(Exception):
    """No live session: the browser goes to the sign-in page (and back here after)."""


class CsrfRejected(Exception):
    """A state-changing request without this session's CSRF token: nothing changes."""


def runtime_of(request: Request) -> Gateway:
    runtime: Gateway = request.app.state.gateway
    return runtime


def cookie_secure(request: Request) -> bool:
    """`Secure` when the browser reached us over https (as a trusted proxy's X-Forwarded-Proto
    says: gateway/app.py), or always/never by SFUMATO_COOKIE_SECURE."""
    settings = runtime_of(request).services.settings
    if settings.cookie_secure != "auto":
        return settings.cookie_secure == "always"
    return request.url.scheme == "https"


def cookie_name(request: Request, name: str) -> str:
    """Over https a cookie is `__Host-` + its name: a browser takes such a cookie only from this
    very host, Secure, for the whole site (Path=/, no Domain), so a page on a sibling subdomain
    cannot toss one of its own in (a login CSRF); a cookie without the prefix is then ignored."""
    return f"__Host-{name}" if cookie_secure(request) else name


def set_cookie(request: Request, response: Response, name: str, value: str, **options: Any) -> None:
    """One of the dashboard's cookies: HttpOnly, scoped to the dashboard (to the site under
    `__Host-`, which requires it)."""
    secure = cookie_secure(request)
    response.set_cookie(
        cookie_name(request, name),
        value,
        path="/" if secure else PREFIX,
        httponly=True,
        secure=secure,
        **options,
    )


def delete_cookie(request: Request, response: Response, name: str) -> None:
    secure = cookie_secure(request)
    response.delete_cookie(
        cookie_name(request, name), path="/" if secure else PREFIX, secure=secure, httponly=True
    )


def client_address(request: Request) -> str:
    """The client, as the outermost trusted proxy saw it (SFUMATO_TRUSTED_PROXIES)."""
    return request.client.host if request.client else "unknown"


def session_token(request: Request) -> str | None:
    return request.cookies.get(cookie_name(request, SESSION_COOKIE))


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    set_cookie(
        request,
        response,
        SESSION_COOKIE,
        token,
        max_age=int(sessions.LIFETIME.total_seconds()),
        samesite="lax",
    )


def clear_session_cookie(request: Request, response: Response) -> None:
    delete_cookie(request, response, SESSION_COOKIE)


def same_origin(request: Request) -> bool:
    """Whether a post came from the dashboard's own pages as far as the browser says:
    `Sec-Fetch-Site` (every current browser sends it) must be same-origin, and `Origin`, when
    sent, this service's own (SFUMATO_PUBLIC_URL's, else the request's). A client that sends
    neither (curl) passes; the forms' tokens still hold."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    public_url = runtime_of(request).services.settings.public_url
    if public_url:
        parts = urlsplit(public_url)
        return origin == f"{parts.scheme}://{parts.netloc}"
    return origin == f"{request.url.scheme}://{request.url.netloc}"


def safe_next(target: str | None) -> str:
    """Only a path of the dashboard itself: never a redirect to another site."""
    if target and target.startswith(PREFIX) and not target.startswith("//") and "\\" not in target:
        return target
    return PREFIX + "/jobs"


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


@dataclass
class Page:
    """A signed-in request: who, the runtime's services, and the posted form (if any)."""

    request: Request
    user: SignedIn
    runtime: Gateway
    form: FormData | None = None
    nav: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def services(self) -> Any:
        return self.runtime.services

    def field(self, name: str, default: str = "") -> str:
        return self.raw(name, default).strip()

    def raw(self, name: str, default: str = "") -> str:
        """A field as typed (passwords keep their spaces)."""
        value = self.form.get(name) if self.form is not None else None
        return value if isinstance(value, str) else default

    def fields(self, name: str) -> list[str]:
        if self.form is None:
            return []
        return [value.strip() for value in self.form.getlist(name) if isinstance(value, str)]

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return render(self.request, template, status, user=self.user, **context)


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    response = TEMPLATES.TemplateResponse(
        request, template, {"prefix": PREFIX, **context}, status_code=status
    )
    response.headers["Cache-Control"] = "no-store"
    return response


async def _signed_in(request: Request) -> SignedIn:
    runtime = runtime_of(request)
    token = session_token(request)
    db = runtime.services.db
    absolute = timedelta(hours=runtime.services.settings.session_absolute_hours)
    user = await anyio.to_thread.run_sync(sessions.resume, db, token, absolute)
    if user is None:
        raise SignInRequired()
    if user.extended:
        request.state.renewed_session = token
    return user


# What a form may hold (its body is bounded too: gateway/bodies.py): one file, on the upload
# form only, and a few dozen fields of a few KiB.
FORM_FIELDS = 64
FORM_FIELD_BYTES = 16 * 1024
FILE_FORMS = (f"{PREFIX}/uploads",)


# PostgreSQL's text cannot hold NUL: a form, a query or a path holding it is refused here
# (the API's bodies and queries in gateway/nul.py), never a 500 at the database.
NUL_REFUSAL = "No field may hold the NUL character (\\u0000)."


def holds_nul(form: FormData) -> bool:
    for name, value in form.multi_items():
        text = value if isinstance(value, str) else (value.filename or "")
        if "\x00" in name or "\x00" in text:
            return True
    return False


async def read_form(request: Request) -> FormData:
    """The posted form, within the bounds above (a 400 beyond them, and for a NUL)."""
    files = 1 if request.url.path in FILE_FORMS else 0
    form = await request.form(
        max_files=files, max_fields=FORM_FIELDS, max_part_size=FORM_FIELD_BYTES
    )
    if holds_nul(form):
        raise StarletteHTTPException(400, NUL_REFUSAL)
    return form


# A number typed in a form: ASCII digits only (Python's int() takes `²` and other Unicode
# digits, and refuses more than 4,300 of them with an error), and at most this many.
WHOLE_DIGITS = 12


def form_whole(value: str) -> int | None:
    """A whole number typed in a form field, or None when it is not one."""
    if value.isascii() and value.isdigit() and len(value) <= WHOLE_DIGITS:
        return int(value)
    return None


class RateLimited(Exception):
    """A dashboard action past the rate limit of the API call it mirrors."""

    def __init__(self, seconds: int) -> None:
        super().__init__(f"Too many requests. Try again in {seconds} seconds.")
        self.seconds = seconds


def spend(page: Page, api_method: str, api_path: str, caller: Caller | None = None) -> None:
    """Count a dashboard action in the rate-limit bucket of the API call it mirrors, for the
    account's dashboard key (the caller its jobs are created as). Raises RateLimited past it;
    counts nothing while Redis is out of reach, as the API's limit does."""
    caller = caller or authentication.dashboard_caller(page.services.db, page.user.account_id)
    try:
        decision = page.runtime.limiter.hit(bucket_of(api_method, api_path), caller.api_key_id)
    except redis.RedisError as error:
        log.warning("dashboard: rate limit not counted, Redis unavailable: %s", error)
        return
    if not decision.allowed:
        raise RateLimited(decision.reset_seconds)


async def _page(request: Request, user: Annotated[SignedIn, Depends(_signed_in)]) -> Page:
    return Page(request, user, runtime_of(request))


async def _posted(request: Request, user: Annotated[SignedIn, Depends(_signed_in)]) -> Page:
    """A state-changing request: the session's CSRF token must come with it, in the form or
    (from the page's own scripts) in the X-CSRF-Token header."""
    form: FormData | None = None
    presented = request.headers.get(CSRF_HEADER)
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await read_form(request)
        value = form.get(CSRF_FIELD)
        presented = value if isinstance(value, str) else presented
    if not sessions.csrf_matches(user, presented):
        raise CsrfRejected()
    return Page(request, user, runtime_of(request), form)


PageDep = Annotated[Page, Depends(_page)]
PostedDep = Annotated[Page, Depends(_posted)]


def error_page(
    request: Request,
    status: int,
    title: str,
    message: str,
    user: SignedIn | None = None,
    back: str | None = None,
) -> HTMLResponse:
    """A refusal's page; `back` (a dashboard path) is where to start again, else the jobs."""
    return render(request, "error.html", status, title=title, message=message, user=user, back=back)


class DashboardRoute(APIRoute):
    """Refusals become a page with their message; a missing session, the sign-in page; a
    rejected CSRF token, a 403 page; a page link whose cursor or query was tampered with, a 400
    page back to the list's first page; anything unexpected, a plain 500 page (logged)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            if b"%00" in request.scope.get("query_string", b"") or "\x00" in request.url.path:
                return error_page(request, 400, "That address is not valid", NUL_REFUSAL)
            try:
                response = await handler(request)
                renewed = getattr(request.state, "renewed_session", None)
                if renewed and SESSION_COOKIE not in response.headers.get("set-cookie", ""):
                    # The rolling expiry: the cookie lives a week from now, as the row does.
                    set_session_cookie(request, response, renewed)
                return response
            except SignInRequired:
                if request.method == "GET":
                    target = request.url.path + (
                        f"?{request.url.query}" if request.url.query else ""
                    )
                    return see_other(f"{PREFIX}/sign-in?next={quote(target, safe='')}")
                return see_other(f"{PREFIX}/sign-in")
            except CsrfRejected:
                return error_page(
                    request,
                    403,
                    "The form has expired",
                    "Nothing was changed. Reload the page and try again.",
                )
            except BadCursor:
                return error_page(
                    request,
                    400,
                    "That page link is not valid",
                    "Its position in the list was changed or did not come from this page.",
                    back=request.url.path,
                )
            except RequestValidationError as error:
                details = validation_details(list(error.errors()))
                return error_page(
                    request,
                    400,
                    "That page link is not valid",
                    "; ".join(f"{name} {why}" for name, why in details.items()),
                    back=request.url.path,
                )
            except RateLimited as limited:
                response = error_page(request, 429, "Too many requests", str(limited))
                response.headers["Retry-After"] = str(limited.seconds)
                return response
            except DomainError as error:
                return error_page(request, error.status, "That did not work", error.message)
            except StarletteHTTPException as error:  # a form past its bounds
                return error_page(request, error.status_code, "That did not work", error.detail)
            except ClientDisconnect:
                log.debug("dashboard: %s: the client went away", request.url.path)
                return Response(status_code=400)
            except DATABASE_UNAVAILABLE:
                log.warning("dashboard: database unavailable")
                return error_page(
                    request, 503, "Temporarily unavailable", "Please try again in a moment."
                )
            except Exception:
                log.exception("dashboard page failed: %s", request.url.path)
                return error_page(
                    request, 500, "Something went wrong", "The error was logged. Please try again."
                )

        return guarded
