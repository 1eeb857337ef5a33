"""The dashboard's front door (issue 31, third security round), over real sockets: the sign-in
limits that a stranger cannot turn against the owner (M2), forwarded addresses trusted only from
the configured proxies (M3), NUL in any field refused with a message (M4), the API's rate limits
on every dashboard action (M7), framing refused and a strict CSP (L1, L2), sign-in posts only
from the dashboard's own origin and `__Host-` cookies over https (L3), numbers that are not
numbers (L4), guesses of the current password limited (L5), key names bounded (L6) and the
session's absolute lifetime (L9).

This module's service trusts 127.0.0.2 and 10.0.0.0/8 as its proxies; the tests reach it as a
client through that "proxy" by binding 127.0.0.2 and sending X-Forwarded-For, or directly from
127.0.0.1 (an untrusted peer, whose forwarded headers must not count)."""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from playwright.sync_api import Browser, ConsoleMessage
from sqlalchemy import update

from core.accounts import api_keys, passwords
from core.accounts import service as accounts
from core.clock import utcnow
from core.ids import new_id
from core.tables import DashboardSession, Style
from tests.conftest import POSTGRES_URL
from tests.dashboard.conftest import DASHBOARD_ENV, Person, sign_in
from tests.support.service import Mode, Service, running_service

pytestmark = pytest.mark.slow
PROXY = "127.0.0.2"
SIGNIN = re.compile(r'name="signin_token" value="([^"]+)"')
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
# The shipped limits where a test counts them (upload, signin); smaller ones where counting to
# the shipped number would only take longer (default, signin_address, signin_account).
RATES = """
[rate_limits]
image = "100000/minute"
video = "100000/minute"
style = "100000/minute"
upload = "30/minute"
default = "20/minute"
signin = "10/minute"
signin_address = "40/hour"
signin_account = "25/hour"

[plans.pro]
max_inflight_images = 1000
max_inflight_videos = 100
daily_generation_cap = 0
"""


def front_door_env(folder: Path) -> dict[str, str]:
    config = folder / "rates.toml"
    config.write_text(RATES)
    return {
        **DASHBOARD_ENV,
        "SFUMATO_CONFIG_FILE": str(config),
        "SFUMATO_TRUSTED_PROXIES": f"{PROXY}, 10.0.0.0/8",
    }


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("front-door")
    with running_service(Mode("embedded", front_door_env(folder), False), folder) as service:
        yield service


@pytest.fixture(scope="module")
def door_on_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The same, its records in a PostgreSQL database of its own (whose text refuses NUL and
    whose columns have lengths and 32-bit integers)."""
    if not POSTGRES_URL:
        pytest.skip("needs SFUMATO_TEST_POSTGRES_URL (set by .ci/run)")
    name = f"sfumato_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = POSTGRES_URL.rpartition("/")
    folder = tmp_path_factory.mktemp("front-door-postgres")
    env = {
        **front_door_env(folder),
        "SFUMATO_DATABASE_URL": f"{base}/{name}".replace(
            "postgresql://", "postgresql+psycopg://", 1
        ),
    }
    try:
        with running_service(Mode("embedded", env, False), folder) as service:
            yield service
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def new_person(service: Service, admin: bool = False) -> Person:
    email = f"door-{secrets.token_hex(5)}@test.local"
    password = secrets.token_urlsafe(12)
    accounts.create_account(service.services.db, email, "pro", 1000)
    passwords.set_password(service.services.db, email, password)
    if admin:
        accounts.set_admin(service.services.db, email)
    return Person(email, password)


@pytest.fixture
def person(door: Service) -> Callable[..., Person]:
    def make(admin: bool = False) -> Person:
        return new_person(door, admin)

    return make


def via_proxy(door: Service, forwarded_for: str, proto: str = "http") -> httpx.Client:
    """A browser behind the trusted proxy: the connection comes from 127.0.0.2, which says whom
    it forwards for and over what."""
    return httpx.Client(
        base_url=door.url + "/dashboard",
        transport=httpx.HTTPTransport(local_address=PROXY),
        headers={"X-Forwarded-For": forwarded_for, "X-Forwarded-Proto": proto},
        timeout=30,
    )


def direct(door: Service, **headers: str) -> httpx.Client:
    """A client straight from 127.0.0.1, not a proxy: whatever it forwards counts for nothing."""
    return httpx.Client(base_url=door.url + "/dashboard", headers=headers, timeout=30)


def attempt(client: httpx.Client, email: str, password: str, **headers: str) -> httpx.Response:
    form = client.get("/sign-in")
    token = SIGNIN.search(form.text)
    assert token is not None
    # Set by hand: a cookie set `Secure` (over https, as the proxy says) is not sent back by
    # httpx over the test's plain http.
    cookies = "; ".join(f"{name}={value}" for name, value in form.cookies.items())
    return client.post(
        "/sign-in",
        data={"email": email, "password": password, "signin_token": token.group(1)},
        headers={"Cookie": cookies, **headers},
    )


@contextmanager
def signed_in(door: Service, who: Person, address: str) -> Iterator[httpx.Client]:
    with via_proxy(door, address) as client:
        assert attempt(client, who.email, who.password).status_code == 303
        yield client


def csrf_of(client: httpx.Client, path: str = "/keys") -> str:
    found = CSRF.search(client.get(path).text)
    assert found is not None
    return found.group(1)


def wrong_until_limited(client: httpx.Client, email: str, most: int = 30) -> int:
    """Wrong passwords until a 429; how many were answered 401 first."""
    for tried in range(most):
        response = attempt(client, email, "a-wrong-password")
        if response.status_code == 429:
            assert "Too many sign-in attempts" in response.text
            assert int(response.headers["Retry-After"]) > 0
            return tried
        assert response.status_code == 401, response.text
    raise AssertionError("never limited")


# M2 ---------------------------------------------------------------------------------------


def test_wrong_passwords_from_one_address_do_not_lock_the_owner_out(
    door: Service, person: Callable[..., Person]
) -> None:
    owner, neighbour = person(), person()
    with via_proxy(door, "198.51.100.20") as attacker:
        # The strict limit, per (account, address): 10 a minute (more if the minute rolls).
        assert wrong_until_limited(attacker, owner.email) >= 10
        assert attempt(attacker, owner.email, owner.password).status_code == 429
        # Someone else behind the same address is not held up by it.
        assert attempt(attacker, neighbour.email, neighbour.password).status_code == 303
    with via_proxy(door, "198.51.100.21") as elsewhere:
        assert attempt(elsewhere, owner.email, owner.password).status_code == 303


def test_an_account_under_attack_backs_off_for_failing_addresses_and_lets_the_owner_in(
    door: Service, person: Callable[..., Person], caplog: pytest.LogCaptureFixture
) -> None:
    owner = person()
    caplog.set_level(logging.WARNING, logger="gateway.limits")
    # 25 wrong passwords (this service's signin_account), each from an address of its own.
    for index in range(25):
        with via_proxy(door, f"203.0.113.{index + 1}, 10.0.0.9") as bot:
            assert attempt(bot, owner.email, "a-wrong-password").status_code == 401
    # The warning names the client as the proxies saw it (the rightmost untrusted hop).
    assert any("203.0.113.25" in record.getMessage() for record in caplog.records)
    with via_proxy(door, "203.0.113.3") as bot:
        # An address that failed is refused for the back-off, the right password included.
        refused = attempt(bot, owner.email, owner.password)
        assert refused.status_code == 429
        assert 3000 < int(refused.headers["Retry-After"]) <= 3600
    with via_proxy(door, "203.0.113.200") as fresh:
        # A fresh address gets its guess checked: a wrong one marks it too...
        assert attempt(fresh, owner.email, "another-wrong-one").status_code == 401
        assert attempt(fresh, owner.email, owner.password).status_code == 429
    with via_proxy(door, "192.0.2.77") as home:
        # ...and the owner, from an address with no failures, gets in.
        assert attempt(home, owner.email, owner.password).status_code == 303


# M3 ---------------------------------------------------------------------------------------


def test_forwarded_addresses_count_only_as_the_trusted_proxies_wrote_them(
    door: Service, person: Callable[..., Person]
) -> None:
    who = person()
    # Rotating the leftmost entry, which the client writes, changes nothing: the address is the
    # rightmost hop that is not a trusted proxy (10.0.0.0/8 here).
    for index in range(10):
        with via_proxy(door, f"192.0.2.{index + 1}, 198.51.100.77, 10.1.2.3") as client:
            assert attempt(client, who.email, "a-wrong-password").status_code == 401
    with via_proxy(door, "192.0.2.99, 198.51.100.77") as client:
        assert attempt(client, who.email, "a-wrong-password").status_code == 429
    with via_proxy(door, "198.51.100.78") as client:
        assert attempt(client, who.email, who.password).status_code == 303
    # From a peer that is not a trusted proxy, X-Forwarded-For is the client's own word: ignored.
    other = person()
    for index in range(10):
        with direct(door, **{"X-Forwarded-For": f"192.0.2.{index + 1}"}) as client:
            assert attempt(client, other.email, "a-wrong-password").status_code == 401
    with direct(door, **{"X-Forwarded-For": "192.0.2.200"}) as client:
        assert attempt(client, other.email, "a-wrong-password").status_code == 429
    # Nor is its X-Forwarded-Proto: no https cookies for it.
    with direct(door, **{"X-Forwarded-Proto": "https"}) as client:
        assert "__Host-" not in client.get("/sign-in").headers["set-cookie"]


# M4 ---------------------------------------------------------------------------------------


def refuses_nul_everywhere(service: Service, who: Person, address: str) -> None:
    """The sign-in, a form, a query, a path and the presign's JSON, each holding NUL: a 400
    that says why, nothing stored, never a 500."""
    with via_proxy(service, address) as client:
        refused = attempt(client, who.email + "\x00", who.password)
        assert refused.status_code == 400
        assert "NUL character" in refused.text
        assert attempt(client, who.email, who.password).status_code == 303
        csrf = csrf_of(client)
        named = client.post("/keys", data={"name": "bad\x00name", "csrf_token": csrf})
        assert named.status_code == 400 and "NUL character" in named.text
        assert api_keys.list_keys(service.services.db, who.email) == []
        for path in ("/jobs?cursor=%00", "/styles/x?q=a%00b", "/jobs/a%00b"):
            page = client.get(path)
            assert page.status_code == 400, path
            assert "NUL character" in page.text
        presign = client.post(
            "/uploads/presign",
            content=b'{"filename": "a\\u0000.png", "contentType": "image/png"}',
            headers={"content-type": "application/json", "x-csrf-token": csrf},
        )
        assert presign.status_code == 400
        assert "NUL" in presign.json()["error"]


def test_nul_in_any_dashboard_field_is_refused_with_a_message(
    door: Service, person: Callable[..., Person]
) -> None:
    refuses_nul_everywhere(door, person(), "198.51.100.40")


def test_on_postgresql_nul_long_names_and_large_numbers_are_refused_not_500s(
    door_on_postgres: Service,
) -> None:
    """Each of these was a 500 on PostgreSQL (issue 31 M4, L4, L6)."""
    refuses_nul_everywhere(door_on_postgres, new_person(door_on_postgres), "198.51.100.120")
    names_are_bounded(door_on_postgres, new_person(door_on_postgres), "198.51.100.121")
    admin = new_person(door_on_postgres, admin=True)
    with signed_in(door_on_postgres, admin, "198.51.100.122") as client:
        csrf = csrf_of(client)

        def grant(amount: str) -> int:
            return client.post(
                "/admin/credit",
                data={"csrf_token": csrf, "email": admin.email, "amount": amount, "reason": "r"},
            ).status_code

        assert grant("3000000000") == 400  # past one grant's bound
        assert grant("1000000000") == grant("1000000000") == 303
        assert grant("1000000000") == 400  # past what a balance holds (a 32-bit column)
    balance = accounts.find_account(door_on_postgres.services.db, admin.email).credit_balance
    assert balance == 2_000_001_000


# M7 ---------------------------------------------------------------------------------------


def test_upload_presigns_spend_the_apis_upload_bucket(
    door: Service, person: Callable[..., Person]
) -> None:
    with signed_in(door, person(), "198.51.100.50") as client:
        headers = {"content-type": "application/json", "x-csrf-token": csrf_of(client)}
        body = {"filename": "a.png", "contentType": "image/png"}
        # 30 a minute, as the API's POST /v1/uploads; a second window at most if one rolls over.
        for tried in range(61):
            answer = client.post("/uploads/presign", json=body, headers=headers)
            if answer.status_code == 429:
                assert tried >= 30
                assert "Too many requests" in answer.json()["error"]
                assert int(answer.headers["Retry-After"]) > 0
                return
            assert answer.status_code == 200, answer.text
    raise AssertionError("60 presigns in a row were never limited")


def test_asset_links_spend_the_apis_default_bucket(
    door: Service, person: Callable[..., Person]
) -> None:
    with signed_in(door, person(), "198.51.100.51") as client:
        csrf = csrf_of(client)
        # A folder link counts as POST /v1/styles/{id}/assets does: before anything is looked up.
        for tried in range(41):
            answer = client.post(
                f"/styles/{new_id()}/assets", data={"images": "x", "csrf_token": csrf}
            )
            if answer.status_code == 429:
                assert tried >= 20
                assert "Too many requests" in answer.text
                return
            assert answer.status_code == 404, answer.text
    raise AssertionError("asset links were never limited")


def test_webhook_actions_spend_the_apis_default_bucket(
    door: Service, person: Callable[..., Person]
) -> None:
    with signed_in(door, person(), "198.51.100.52") as client:
        csrf = csrf_of(client)
        # A delete counts as DELETE /v1/webhooks/{id} does: before the endpoint is looked up.
        for tried in range(41):
            answer = client.post(f"/webhooks/{new_id()}/delete", data={"csrf_token": csrf})
            if answer.status_code == 429:
                assert tried >= 20
                assert "Too many requests" in answer.text
                assert int(answer.headers["Retry-After"]) > 0
                return
            assert answer.status_code == 404, answer.text
    raise AssertionError("webhook endpoint deletes were never limited")


# L1, L2 -----------------------------------------------------------------------------------


def test_every_dashboard_answer_forbids_framing_and_inline_script(
    door: Service, person: Callable[..., Person]
) -> None:
    with signed_in(door, person(), "198.51.100.60") as client:
        answers = [
            client.get(path)
            for path in (
                "/sign-in",
                "/keys",
                "/jobs",
                "/create",
                "/styles",
                "/account",
                "/webhooks",
            )
        ]
        answers += [client.get("/static/dashboard.js"), client.get("")]
        for answer in answers:
            headers = answer.headers
            policy = headers["content-security-policy"]
            for directive in (
                "script-src 'self'",
                "style-src 'self'",
                "frame-ancestors 'none'",
                "object-src 'none'",
                "base-uri 'none'",
            ):
                assert directive in policy, (answer.url, policy)
            assert "unsafe-inline" not in policy
            assert headers["x-frame-options"] == "DENY"
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["referrer-policy"] == "same-origin"
            assert "strict-transport-security" not in headers  # plain http
        for page in answers[:7]:
            assert re.search(r"<script(?![^>]*\bsrc=)", page.text) is None
            assert re.search(r"\sstyle=|\son[a-z]+=", page.text) is None
    with via_proxy(door, "198.51.100.61", proto="https") as secure:
        assert secure.get("/sign-in").headers["strict-transport-security"] == "max-age=31536000"


def test_pages_keep_their_policy_in_the_browser_and_cannot_be_framed(
    door: Service, browser: Browser, person: Callable[..., Person]
) -> None:
    who = person()
    account = accounts.find_account(door.services.db, who.email)
    style = Style(
        id=new_id(),
        account_id=account.id,
        name="Framed brand",
        colours=[{"type": "solid", "name": "Pink", "hex": "#E0218A", "role": "primary"}],
        typography=[{"fontFamily": "Georgia", "weight": "bold", "role": "heading"}],
        tone=[],
        aesthetic="",
    )
    with door.services.db.write() as session:
        session.add(style)
    context = browser.new_context()
    violations: list[str] = []

    def watch(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    try:
        page = context.new_page()
        page.on("console", watch)
        sign_in(page, door.url, who)
        for path in ("keys", "create", "styles", "account", f"styles/{style.id}"):
            page.goto(f"{door.url}/dashboard/{path}")
        # The colours and type come through the page's script, not inline style.
        chip = page.locator(".swatch .chip").first
        assert chip.evaluate("c => getComputedStyle(c).backgroundColor") == "rgb(224, 33, 138)"
        specimen = page.locator(".specimen").first
        assert specimen.evaluate("p => getComputedStyle(p).fontWeight") == "700"
        assert violations == []
        # Another page framing the keys page gets nothing in the frame.
        page.set_content(f'<iframe src="{door.url}/dashboard/keys"></iframe>')
        frame = page.frames[-1]
        frame.wait_for_load_state()
        assert frame.locator("form").count() == 0
    finally:
        context.close()


# L3 ---------------------------------------------------------------------------------------


def test_sign_in_posts_only_from_the_dashboards_own_origin(
    door: Service, person: Callable[..., Person]
) -> None:
    who = person()
    with via_proxy(door, "198.51.100.70") as client:
        for headers in (
            {"Sec-Fetch-Site": "same-site"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": "http://evil.example.test"},
            {"Origin": "null"},
        ):
            refused = attempt(client, who.email, who.password, **headers)
            assert refused.status_code == 403, headers
            assert "sfumato_session" not in refused.headers.get("set-cookie", "")
        own = {"Origin": door.url, "Sec-Fetch-Site": "same-origin"}
        assert attempt(client, who.email, who.password, **own).status_code == 303


def test_over_https_the_cookies_are_host_only_and_a_tossed_one_counts_for_nothing(
    door: Service, person: Callable[..., Person]
) -> None:
    who = person()
    with via_proxy(door, "198.51.100.71", proto="https") as client:
        form = client.get("/sign-in")
        assert form.headers["set-cookie"].startswith("__Host-sfumato_signin=")
        # A sibling subdomain can set a cookie named without the prefix: a sign-in token of its
        # choosing, and its own session. Neither is read over https.
        token = SIGNIN.search(form.text).group(1)  # type: ignore[union-attr]
        tossed = client.post(
            "/sign-in",
            data={"email": who.email, "password": who.password, "signin_token": "tossed"},
            headers={"Cookie": "sfumato_signin=tossed"},
        )
        assert tossed.status_code == 403
        signed = client.post(
            "/sign-in",
            data={"email": who.email, "password": who.password, "signin_token": token},
            headers={"Cookie": f"__Host-sfumato_signin={token}"},
        )
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"]
        assert cookie.startswith("__Host-sfumato_session=")
        assert "Path=/;" in cookie and "Secure" in cookie and "Domain" not in cookie
        session = signed.cookies["__Host-sfumato_session"]
        assert (
            client.get("/keys", headers={"Cookie": f"sfumato_session={session}"}).status_code == 303
        )
        opened = client.get("/keys", headers={"Cookie": f"__Host-sfumato_session={session}"})
        assert opened.status_code == 200


# L4 ---------------------------------------------------------------------------------------


def test_numbers_that_are_not_plain_numbers_get_a_form_message(
    door: Service, person: Callable[..., Person]
) -> None:
    who = person(admin=True)
    huge = "9" * 5000
    with signed_in(door, who, "198.51.100.80") as client:
        csrf = csrf_of(client)
        for variations in ("²", "٣", huge):
            refused = client.post(
                "/create/generate",
                data={"csrf_token": csrf, "prompt": "a cat", "variations": variations},
            )
            assert refused.status_code == 400, variations
            assert "Variations" in refused.text
        for duration in ("²", huge):
            refused = client.post(
                "/create/animate",
                data={"csrf_token": csrf, "image": "x", "prompt": "a", "duration": duration},
            )
            assert refused.status_code == 400
        for days in ("²", huge):
            refused = client.post(
                "/keys", data={"csrf_token": csrf, "name": "n", "expires_in_days": days}
            )
            assert refused.status_code == 400
            assert "whole number of days" in refused.text
        for amount in ("²", huge, "3000000000"):
            refused = client.post(
                "/admin/credit",
                data={"csrf_token": csrf, "email": who.email, "amount": amount, "reason": "r"},
            )
            assert refused.status_code == 400, amount
            assert "whole number" in refused.text
        assert accounts.find_account(door.services.db, who.email).credit_balance == 1000


# L5 ---------------------------------------------------------------------------------------


def test_guesses_of_the_current_password_are_limited(
    door: Service, person: Callable[..., Person]
) -> None:
    who = person()
    with signed_in(door, who, "198.51.100.90") as client:
        csrf = csrf_of(client, "/account")

        def change(current: str) -> httpx.Response:
            return client.post(
                "/account/password",
                data={
                    "csrf_token": csrf,
                    "current": current,
                    "new": "a new password here",
                    "repeat": "a new password here",
                },
            )

        for tried in range(30):
            answer = change(f"guess-{tried}")
            if answer.status_code == 429:
                assert tried >= 9  # the sign-in above spent one of the 10
                assert "Too many attempts" in answer.text
                break
            assert answer.status_code == 400
        else:
            raise AssertionError("guesses were never limited")
        assert change(who.password).status_code == 429


# L6 ---------------------------------------------------------------------------------------


def names_are_bounded(service: Service, who: Person, address: str) -> None:
    with signed_in(service, who, address) as client:
        csrf = csrf_of(client)
        refused = client.post("/keys", data={"csrf_token": csrf, "name": "k" * 201})
        assert refused.status_code == 400
        assert "at most 200 characters" in refused.text
        assert client.post("/keys", data={"csrf_token": csrf, "name": "k" * 200}).status_code == 201
        (key,) = api_keys.list_keys(service.services.db, who.email)
        renamed = client.post(
            f"/keys/{key.id}/rename", data={"csrf_token": csrf, "name": "r" * 201}
        )
        assert renamed.status_code == 400
        assert api_keys.list_keys(service.services.db, who.email)[0].name == "k" * 200


def test_key_names_are_bounded_in_the_dashboard_as_in_the_cli(
    door: Service, person: Callable[..., Person]
) -> None:
    names_are_bounded(door, person(), "198.51.100.100")
    with pytest.raises(accounts.AccountError, match="at most 200"):
        api_keys.create_key(door.services.db, person().email, "c" * 201, None)


# L9 ---------------------------------------------------------------------------------------


def test_a_session_ends_its_absolute_lifetime_after_sign_in(
    door: Service, person: Callable[..., Person]
) -> None:
    who = person()
    account_id = accounts.find_account(door.services.db, who.email).id
    with signed_in(door, who, "198.51.100.110") as client:
        assert client.get("/keys").status_code == 200
        lifetime = timedelta(hours=door.services.settings.session_absolute_hours)
        with door.services.db.write() as session:
            # Signed in just over the lifetime ago, and used all along (not idle).
            session.execute(
                update(DashboardSession)
                .where(DashboardSession.account_id == account_id)
                .values(
                    created_at=utcnow() - lifetime - timedelta(minutes=1),
                    last_seen_at=utcnow(),
                )
            )
        gone = client.get("/keys")
        assert gone.status_code == 303
        assert "/dashboard/sign-in" in gone.headers["location"]
