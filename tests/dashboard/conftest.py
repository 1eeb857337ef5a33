"""The dashboard under test: a real server (uvicorn, embedded mode) that may fetch the fixture
sites on loopback, accounts with passwords, and headless Chromium driven by Playwright.

Every browser context sends its own X-Forwarded-For (the service trusts it from 127.0.0.1, as
from a proxy: SFUMATO_TRUSTED_PROXIES), so the sign-in limits per client address count each
test's browser apart; the limits themselves are tested with fixed addresses."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from benchmarks.testkit.sites import site_server
from core.accounts import passwords
from core.accounts import service as accounts
from pipelines.styles import find_chromium
from tests.conftest import COMMON_ENV
from tests.support.service import Mode, Service, running_service

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).parent / "artifacts"


DASHBOARD_ENV = {
    **COMMON_ENV,
    "SFUMATO_FETCH_ALLOW": "127.0.0.1",
    "SFUMATO_STYLE_RENDER_SECONDS": "45",
    # The tests' clients connect from 127.0.0.1, as a proxy in front of the gateway would.
    "SFUMATO_TRUSTED_PROXIES": "127.0.0.1",
}


@dataclass(frozen=True)
class Person:
    email: str
    password: str


@pytest.fixture(scope="module")
def dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with running_service(
        Mode("embedded", DASHBOARD_ENV, False), tmp_path_factory.mktemp("dash")
    ) as service:
        yield service


@pytest.fixture(scope="module")
def sites() -> Iterator[str]:
    with site_server() as url:
        yield url


@pytest.fixture
def person(dash: Service) -> Callable[..., Person]:
    def make(credits: int = 1000, plan: str = "pro", admin: bool = False) -> Person:
        email = f"person-{secrets.token_hex(5)}@test.local"
        password = secrets.token_urlsafe(12)
        db = dash.services.db
        accounts.create_account(db, email, plan, credits)
        passwords.set_password(db, email, password)
        if admin:
            accounts.set_admin(db, email)
        return Person(email, password)

    return make


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Per module: Playwright's sync API runs its event loop in the test thread, and while it
    does `asyncio.run` fails there; a session-long browser broke the async tests that a
    parallel run's worker took after a browser test."""
    executable = find_chromium("")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed; .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    made = browser.new_context(
        viewport={"width": 1280, "height": 900},
        extra_http_headers={
            "X-Forwarded-For": f"10.9.{secrets.randbelow(250)}.{secrets.randbelow(250)}"
        },
    )
    made.set_default_timeout(20_000)
    yield made
    made.close()


def sign_in(page: Page, base: str, who: Person) -> None:
    page.goto(f"{base}/dashboard/sign-in")
    page.get_by_label("Email").fill(who.email)
    page.get_by_label("Password").fill(who.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/dashboard/jobs")


def screenshot(page: Page, name: str) -> Path:
    """A full-page screenshot kept as a test artifact (tests/dashboard/artifacts/)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # The images in view loaded (a thumbnail's first request makes it).
    page.wait_for_function(
        "() => [...document.images]"
        ".filter(i => i.getBoundingClientRect().top < innerHeight)"
        ".every(i => i.complete)"
    )
    page.screenshot(path=str(path), full_page=True)
    return path
