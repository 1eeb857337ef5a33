"""The dashboard's rules over plain HTTP: nothing changes without a session or without the
CSRF token, a double-submitted form makes one job, sign-in is limited and says the same for an
unknown email, the keys and accounts lists page with the API's cursors, and the dashboard stays
out of the OpenAPI document."""

from __future__ import annotations

import html
import io
import re
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from PIL import Image

from core.accounts import api_keys
from core.accounts import service as accounts
from core.tables import ApiKey, JobRow
from core.uploads import service as uploads_service
from tests.dashboard.conftest import Person
from tests.support.service import Service

pytestmark = pytest.mark.slow
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
SIGNIN = re.compile(r'name="signin_token" value="([^"]+)"')
FORM_TOKEN = re.compile(r'name="form_token" value="([^"]+)"')
KEY_ROW = re.compile(r'<tr data-key-id="([^"]+)"')
ACCOUNT_ROW = re.compile(r'<tr data-account-id="([^"]+)"')


def browser_like(dash: Service, address: str) -> httpx.Client:
    return httpx.Client(
        base_url=dash.url + "/dashboard", headers={"X-Forwarded-For": address}, timeout=30
    )


def attempt(client: httpx.Client, email: str, password: str) -> httpx.Response:
    form = client.get("/sign-in")
    token = SIGNIN.search(form.text)
    assert token is not None
    return client.post(
        "/sign-in",
        data={"email": email, "password": password, "signin_token": token.group(1)},
    )


def attempt_as_over(
    client: httpx.Client, proto: str, email: str, password: str, **headers: str
) -> httpx.Response:
    """A sign-in as a browser that reached the service over `proto` through a trusted proxy
    (the test talks plain http to it, so a cookie set `Secure` is sent back by hand)."""
    client.headers["X-Forwarded-Proto"] = proto
    form = client.get("/sign-in")
    token = SIGNIN.search(form.text)
    assert token is not None
    cookies = "; ".join(f"{name}={value}" for name, value in form.cookies.items())
    return client.post(
        "/sign-in",
        data={"email": email, "password": password, "signin_token": token.group(1)},
        headers={"Cookie": cookies, **headers},
    )


@pytest.fixture
def signed_in(
    dash: Service, person: Callable[..., Person]
) -> Iterator[tuple[httpx.Client, Person]]:
    who = person()
    with browser_like(dash, f"10.7.{id(who) % 250}.1") as client:
        response = attempt(client, who.email, who.password)
        assert response.status_code == 303, response.text
        yield client, who


def csrf_of(client: httpx.Client, path: str = "/keys") -> str:
    found = CSRF.search(client.get(path).text)
    assert found is not None
    return found.group(1)


def keys_of(dash: Service, email: str) -> list[ApiKey]:
    return api_keys.list_keys(dash.services.db, email)


def test_a_post_without_the_csrf_token_changes_nothing(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    refused = client.post("/keys", data={"name": "sneaky"})
    assert refused.status_code == 403
    assert "Nothing was changed" in refused.text
    refused = client.post("/keys", data={"name": "sneaky", "csrf_token": "forged"})
    assert refused.status_code == 403
    assert keys_of(dash, who.email) == []
    accepted = client.post("/keys", data={"name": "real", "csrf_token": csrf_of(client)})
    assert accepted.status_code == 201
    assert [key.name for key in keys_of(dash, who.email)] == ["real"]
    key_id = keys_of(dash, who.email)[0].id
    refused = client.post(f"/keys/{key_id}/state", data={"state": "revoked", "confirm": "yes"})
    assert refused.status_code == 403
    assert keys_of(dash, who.email)[0].state == "active"


def test_a_post_without_a_session_changes_nothing(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    csrf = csrf_of(client)
    with browser_like(dash, "10.7.200.2") as stranger:
        for path, data in (
            ("/keys", {"name": "sneaky", "csrf_token": csrf}),
            ("/create/generate", {"prompt": "x", "csrf_token": csrf}),
            ("/account/password", {"csrf_token": csrf, "current": "x", "new": "y" * 12}),
        ):
            response = stranger.post(path, data=data)
            assert response.status_code == 303
            assert response.headers["location"] == "/dashboard/sign-in"
    assert keys_of(dash, who.email) == []


def test_a_double_submitted_form_makes_one_job(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    page = client.get("/create").text
    form = {
        "csrf_token": CSRF.search(page).group(1),  # type: ignore[union-attr]
        "form_token": FORM_TOKEN.search(page).group(1),  # type: ignore[union-attr]
        "prompt": "[sleep 0.2] one job only",
    }
    first = client.post("/create/generate", data=form)
    second = client.post("/create/generate", data=form)
    assert first.status_code == second.status_code == 303
    assert first.headers["location"] == second.headers["location"]
    account = accounts.find_account(dash.services.db, who.email)
    with dash.services.db.read() as session:
        jobs = session.query(JobRow).filter(JobRow.account_id == account.id).all()
    assert len(jobs) == 1
    assert account.credit_balance == 1000 - 2  # one medium 1K image charged once


def test_bad_input_gets_a_message_on_the_form_and_changes_nothing(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    page = client.get("/create").text
    response = client.post(
        "/create/generate",
        data={
            "csrf_token": CSRF.search(page).group(1),  # type: ignore[union-attr]
            "prompt": "",
            "aspect_ratio": "7:5",
        },
    )
    assert response.status_code == 400
    assert "Please correct the form." in response.text
    assert "Aspect ratio" in response.text and "Traceback" not in response.text
    account = accounts.find_account(dash.services.db, who.email)
    assert account.credit_balance == 1000
    response = client.post(
        "/keys", data={"csrf_token": csrf_of(client), "name": "x", "expires_in_days": "-3"}
    )
    assert response.status_code == 400 and "whole number of days" in response.text
    assert keys_of(dash, who.email) == []


def _limited(client: httpx.Client, email: str) -> int:
    """Wrong passwords until the limit answers; the seconds it says to wait. At least 10 are
    let through in the minute's window first (the window may roll over meanwhile, so more)."""
    for tried in range(1, 31):
        response = attempt(client, email, "still-wrong-password")
        if response.status_code == 429:
            assert tried > 10 - 2  # two attempts were spent before this loop
            assert "Too many sign-in attempts" in response.text
            return int(response.headers["Retry-After"])
        assert response.status_code == 401
    raise AssertionError("sign-in was never limited")


def test_sign_in_answers_the_same_for_an_unknown_email_and_is_limited(
    dash: Service, person: Callable[..., Person]
) -> None:
    who = person()
    with browser_like(dash, "10.6.6.6") as client:
        unknown = attempt(client, "nobody@test.local", "whatever-password")
        wrong = attempt(client, who.email, "whatever-password")
        assert unknown.status_code == wrong.status_code == 401
        message = "That email and password do not match an account."
        assert message in unknown.text and message in wrong.text
        if _limited(client, who.email) < 5:
            time.sleep(6)  # the window is about to roll over: count again in a fresh one
            _limited(client, who.email)
        # While limited, even the right password is refused from that address...
        assert attempt(client, who.email, who.password).status_code == 429
    with browser_like(dash, "10.6.6.7") as other:
        # ...but not from another one (issue 31 M2: a stranger cannot lock the owner out).
        assert attempt(other, who.email, who.password).status_code == 303


def test_the_sign_in_form_refuses_a_cross_site_post(
    dash: Service, person: Callable[..., Person]
) -> None:
    who = person()
    with browser_like(dash, "10.6.7.1") as client:
        response = client.post(
            "/sign-in", data={"email": who.email, "password": who.password, "signin_token": "x"}
        )
        assert response.status_code == 403
        assert "sfumato_session" not in response.cookies


def test_a_password_change_ends_every_session(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    with browser_like(dash, "10.7.201.3") as second:
        assert attempt(second, who.email, who.password).status_code == 303
        new_password = "a brand new password"
        changed = client.post(
            "/account/password",
            data={
                "csrf_token": csrf_of(client, "/account"),
                "current": who.password,
                "new": new_password,
                "repeat": new_password,
            },
        )
        assert changed.status_code == 303
        assert second.get("/jobs").status_code == 303  # signed out there too
        assert client.get("/jobs").status_code == 303
        assert attempt(second, who.email, new_password).status_code == 303


def test_the_cookie_is_secure_over_https_from_a_trusted_proxy(
    dash: Service, person: Callable[..., Person]
) -> None:
    who = person()
    for proto, name, secure in (
        ("https", "__Host-sfumato_session", True),
        ("http", "sfumato_session", False),
    ):
        with browser_like(dash, "10.6.8.1") as client:
            client.headers["X-Forwarded-Proto"] = proto
            response = attempt_as_over(client, proto, who.email, who.password)
            assert response.status_code == 303
            cookie = next(
                value
                for value in response.headers.get_list("set-cookie")
                if value.startswith(f"{name}=")
            )
            assert "HttpOnly" in cookie and "SameSite=lax" in cookie
            assert ("Secure" in cookie) is secure
            assert ("Path=/;" in cookie) is secure  # __Host- requires the whole site


def test_the_dashboard_is_not_in_the_openapi_document(dash: Service) -> None:
    document = httpx.get(dash.url + "/v1/openapi.json").json()
    assert not [path for path in document["paths"] if "dashboard" in path]


def test_admin_pages_are_for_admins_only(
    dash: Service, signed_in: tuple[httpx.Client, Person], person: Callable[..., Person]
) -> None:
    client, who = signed_in
    assert client.get("/admin").status_code == 403
    other = person()
    refused = client.post(
        "/admin/credit",
        data={"csrf_token": csrf_of(client), "email": other.email, "amount": "5", "reason": "x"},
    )
    assert refused.status_code == 403
    assert accounts.find_account(dash.services.db, other.email).credit_balance == 1000
    accounts.set_admin(dash.services.db, who.email)
    granted = client.post(
        "/admin/credit",
        data={"csrf_token": csrf_of(client), "email": other.email, "amount": "5", "reason": "gift"},
    )
    assert granted.status_code == 303
    assert accounts.find_account(dash.services.db, other.email).credit_balance == 1005
    client.post(
        "/admin/plan", data={"csrf_token": csrf_of(client), "email": other.email, "plan": "free"}
    )
    assert accounts.find_account(dash.services.db, other.email).plan_id == "free"


def test_the_upload_form_works_without_javascript(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    account_id = accounts.find_account(dash.services.db, who.email).id
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 200, 30)).save(buffer, "PNG")
    csrf = csrf_of(client, "/uploads")
    sent = client.post(
        "/uploads",
        data={"csrf_token": csrf},
        files={"file": ("green.png", buffer.getvalue(), "image/png")},
    )
    assert sent.status_code == 303
    assert sent.headers["location"] == "/dashboard/uploads?done=uploaded"
    listed, _ = uploads_service.list_page(dash.services, account_id, None, 10)
    assert [(media.width, media.height) for media in listed] == [(40, 30)]
    refused = client.post(
        "/uploads",
        data={"csrf_token": csrf},
        files={"file": ("notes.png", b"not an image at all", "image/png")},
    )
    assert refused.status_code == 400 and "Not uploaded" in refused.text
    # The browser's own steps need the CSRF header too.
    presign = client.post(
        "/uploads/presign", json={"filename": "a.png", "contentType": "image/png"}
    )
    assert presign.status_code == 403
    assert len(uploads_service.list_page(dash.services, account_id, None, 10)[0]) == 1


def _every_page(
    client: httpx.Client, first: str, row: re.Pattern[str], older: str
) -> list[list[str]]:
    """The row ids of each page, following the page's `older` link from `first` to the end."""
    pages: list[list[str]] = []
    path: str | None = first
    while path is not None:
        response = client.get(path)
        assert response.status_code == 200, response.text
        pages.append(row.findall(response.text))
        link = re.search(rf'href="/dashboard(/[^"]+)">{older}</a>', response.text)
        path = html.unescape(link.group(1)) if link else None
        assert len(pages) < 50, "the pages never end"
    return pages


def test_the_keys_list_pages_with_cursors_showing_every_key_once(
    dash: Service, signed_in: tuple[httpx.Client, Person]
) -> None:
    client, who = signed_in
    made = [api_keys.create_key(dash.services.db, who.email, f"key {n}", None) for n in range(30)]
    newest_first = [new.key.id for new in reversed(made)]
    first = client.get("/keys").text
    assert len(KEY_ROW.findall(first)) == 24  # the default page
    assert "Older keys" in first and "Newest keys" not in first
    pages = _every_page(client, "/keys?limit=7", KEY_ROW, "Older keys")
    assert [len(page) for page in pages] == [7, 7, 7, 7, 2]
    assert [key_id for page in pages for key_id in page] == newest_first
    later = client.get("/keys?limit=7&cursor=" + re.search(r"cursor=([^\"&]+)", first).group(1))  # type: ignore[union-attr]
    assert "Newest keys" in later.text


def test_the_admin_accounts_list_pages_with_cursors_showing_every_account_once(
    dash: Service, signed_in: tuple[httpx.Client, Person], person: Callable[..., Person]
) -> None:
    client, who = signed_in
    accounts.set_admin(dash.services.db, who.email)
    # Enough accounts of its own for three pages, whatever other tests left in the module's
    # database (under xdist this module may run alone).
    for _ in range(8):
        person()
    every = {account.id for account in accounts.list_accounts(dash.services.db)}
    assert len(every) > 8
    pages = _every_page(client, "/admin?limit=3", ACCOUNT_ROW, "Older accounts")
    seen = [account_id for page in pages for account_id in page]
    assert sorted(seen) == sorted(every)  # each exactly once
    assert all(len(page) == 3 for page in pages[:-1]) and 1 <= len(pages[-1]) <= 3


@pytest.mark.parametrize("path", ["/keys", "/admin", "/jobs", "/uploads"])
def test_a_tampered_page_link_gets_a_clear_page_not_a_500(
    dash: Service, signed_in: tuple[httpx.Client, Person], path: str
) -> None:
    client, who = signed_in
    accounts.set_admin(dash.services.db, who.email)
    for _ in range(3):
        api_keys.create_key(dash.services.db, who.email, "k", None)
    real = re.search(r"cursor=([^\"&]+)", client.get("/keys?limit=1").text).group(1)  # type: ignore[union-attr]
    tampered = real[:-3] + ("AAA" if not real.endswith("AAA") else "BBB")
    sizes = ("limit=0", "limit=51", "limit=many") if path != "/uploads" else ()
    for query in (f"cursor={tampered}", "cursor=not-a-cursor", "cursor=" + "x" * 600, *sizes):
        response = client.get(f"{path}?{query}")
        assert response.status_code == 400, (query, response.text)
        assert "That page link is not valid" in response.text
        assert f'href="/dashboard{path}">Start again from the first page' in response.text
        assert "Traceback" not in response.text and "went wrong" not in response.text
    if sizes:
        assert "limit must be at most 50" in client.get(f"{path}?limit=51").text
