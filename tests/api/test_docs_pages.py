"""/docs (Swagger UI) and /redoc (ReDoc) in headless Chromium with every request that is not to
the server blocked, as on a machine without internet: each page shows every operation of the
OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, sync_playwright

from tests.support.service import Service

CHROMIUM = "/usr/bin/chromium"
REDOC_FOOTER_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def offline_page(browser: Browser, server: str, blocked: list[str]) -> Page:
    page = browser.new_page()

    def only_the_server(route: Route) -> None:
        if route.request.url.startswith(server + "/"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_server)
    return page


def operations(service: Service) -> list[tuple[str, str, str]]:
    """(method, path, summary) of every operation the document lists."""
    document = httpx.get(f"{service.api}/openapi.json").json()
    return [
        (method.upper(), path, operation["summary"])
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("service", ["embedded"], indirect=True)
def test_swagger_ui_lists_every_operation_offline(service: Service, browser: Browser) -> None:
    blocked: list[str] = []
    page = offline_page(browser, service.url, blocked)
    page.goto(f"{service.url}/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    shown = {
        (
            block.get_attribute("class").split("opblock-")[-1].split()[0].upper(),
            block.query_selector(".opblock-summary-path").get_attribute("data-path"),
        )
        for block in page.query_selector_all(".opblock")
    }
    expected = operations(service)
    assert len(expected) >= 20
    assert {(method, path) for method, path, _ in expected} == shown
    page.close()
    assert blocked == [], "the page asked for something beyond the server"


@pytest.mark.slow
@pytest.mark.parametrize("service", ["embedded"], indirect=True)
def test_redoc_lists_every_operation_offline(service: Service, browser: Browser) -> None:
    blocked: list[str] = []
    page = offline_page(browser, service.url, blocked)
    page.goto(f"{service.url}/redoc")
    page.wait_for_selector("h2", timeout=30_000)
    text = page.inner_text("body")
    for method, path, summary in operations(service):
        assert summary in text, (method, path)
    page.close()
    # ReDoc's only outside request is the "API docs by Redocly" footer logo, built into its
    # bundle; blocked, as here, the page is otherwise whole.
    assert set(blocked) <= {REDOC_FOOTER_LOGO}, blocked
