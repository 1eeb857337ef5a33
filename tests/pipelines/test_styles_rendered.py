"""Style extraction from the rendered page: sites only a browser can read, the browser's budget
and network lock, the brand images it keeps (issue 22) and colour roles from custom property
names (issue 20), on the fixture sites of tests/fixtures/sites served on loopback."""

from __future__ import annotations

import io
import os
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from PIL import Image

from core.fetch import FetchPolicy, fetch
from core.settings import Settings
from pipelines.registry import PipelineRegistry
from pipelines.styles import (
    Browser,
    Extraction,
    Fetcher,
    RenderBudget,
    RenderFailed,
    extract_style,
)
from pipelines.styles.browser import sandbox_attempts
from pipelines.styles.palette import role_hint
from tests.support.control import RecordingControl
from tests.support.styles import colours_by_role, fonts_by_role, image_type, is_png
from workers.style_extraction import StyleExtractor


def rendered(url: str, fetcher: Fetcher, browser: Browser, **budget: float) -> Extraction:
    extraction = extract_style(url, fetcher, image_type, browser, RenderBudget(**budget))
    assert extraction.engine == "rendered"
    return extraction


def text_only(url: str, fetcher: Fetcher) -> Extraction:
    return extract_style(url, fetcher, image_type)


def test_a_client_rendered_page_is_read_after_its_script_ran(
    base_url: str, fetcher: Fetcher, chromium: Browser
) -> None:
    style = rendered(f"{base_url}/spa/", fetcher, chromium).style
    assert style["name"] == "Wayfarer"
    assert style["tagline"] == "Plan trips together"
    roles = {c["role"]: c["hex"] for c in style["colours"] if c["type"] == "solid"}
    assert roles["primary"] == "#E4572E"  # the call to action the script rendered
    assert roles["background"] == "#FFFBF5" and roles["text"] == "#1D3557"
    assert "adventurous" in style["tone"]
    assert text_only(f"{base_url}/spa/", fetcher).style["tagline"] is None, "an empty body"


def test_css_in_js_colours(base_url: str, fetcher: Fetcher, chromium: Browser) -> None:
    extraction = rendered(f"{base_url}/cssinjs/", fetcher, chromium)
    roles = colours_by_role(extraction)
    assert roles["primary"] == "#0F766E"  # the button, styled by an inserted CSSOM rule
    assert roles["background"] == "#F0FDFA" and roles["text"] == "#134E4A"
    assert fonts_by_role(extraction)["body"]["fontFamily"] == "Figtree"
    assert "#0F766E" not in colours_by_role(text_only(f"{base_url}/cssinjs/", fetcher)).values()


def test_a_font_loaded_by_the_font_loading_api(
    base_url: str, fetcher: Fetcher, chromium: Browser
) -> None:
    fonts = fonts_by_role(rendered(f"{base_url}/fontapi/", fetcher, chromium))
    assert fonts["heading"]["fontFamily"] == "Brandface"
    assert fonts["body"]["fontFamily"] == "Georgia"


def test_a_theme_switched_by_script(base_url: str, fetcher: Fetcher, chromium: Browser) -> None:
    style = rendered(f"{base_url}/theme/", fetcher, chromium).style
    roles = {c["role"]: c["hex"] for c in style["colours"] if c["type"] == "solid"}
    assert roles["background"] == "#0B1120" and roles["text"] == "#F1F5F9"
    assert roles["accent"] == "#22D3EE"
    assert style["aesthetic"].startswith("A dark")
    assert colours_by_role(text_only(f"{base_url}/theme/", fetcher))["background"] == "#FFFFFF"


def test_an_inline_svg_logo_with_script_becomes_a_png(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    """Issue 22: an `<svg onload=...>` logo is stored as pixels, never as markup."""
    extraction = extract_style(f"{base_url}/svglogo/", fetcher, image_type, engine)
    logo = extraction.logo
    assert logo is not None and logo.url is None and logo.alt_text == "Saltmarsh logo"
    assert logo.content_type == "image/png" and is_png(logo.body)
    assert b"alert" not in logo.body and b"<svg" not in logo.body
    with Image.open(io.BytesIO(logo.body)) as image:
        assert min(image.size) >= 48
    assert "#DB2777" in {c.get("hex") for c in extraction.style["colours"]}


def test_html_served_as_an_image_is_never_a_brand_image(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    """Issue 22: the header logos are HTML under `image/x-custom` and under `image/svg+xml`: both
    refused; the touch icon is used."""
    extraction = extract_style(f"{base_url}/imagetrap/", fetcher, image_type, engine)
    assert extraction.logo is not None
    assert extraction.logo.url == f"{base_url}/imagetrap/touch-icon.png"
    assert extraction.logo.content_type == "image/png"
    assert all(b"<script" not in image.body for image in extraction.brand_images)


def test_roles_follow_the_role_word_of_custom_property_names(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    """Issue 20: with `--brand-primary`, `--brand-accent`, `--brand-ink`, `--brand-paper` the
    paper is the background and the ink the text, and a light page is called light."""
    extraction = extract_style(f"{base_url}/tokens/", fetcher, image_type, engine)
    roles = colours_by_role(extraction)
    assert roles["primary"] == "#5B21B6"
    assert roles["accent"] == "#F59E0B"
    assert roles["text"] == "#1C1917"
    assert roles["background"] == "#FAFAF9"
    aesthetic = extraction.style["aesthetic"]
    assert aesthetic.startswith("A light") and "dark" not in aesthetic


def test_role_words_of_custom_property_names() -> None:
    assert role_hint("--brand-accent") == "accent"
    assert role_hint("--brand-paper") == "background"
    assert role_hint("--brand-ink") == "text"
    assert role_hint("--brand-primary") == "primary"
    assert role_hint("--brand") is None and role_hint("--color-brand") is None
    assert role_hint("--bg-primary") == "background"
    assert role_hint("--text-primary") == "text"
    assert role_hint("--md-sys-color-on-primary") is None
    assert role_hint("--button-bg") is None and role_hint("--button-primary") == "primary"
    assert role_hint("--colorSecondary") == "secondary"


def test_a_page_that_keeps_the_network_busy_is_read_in_bounded_time(
    base_url: str, fetcher: Fetcher, chromium: Browser
) -> None:
    started = time.perf_counter()
    extraction = rendered(f"{base_url}/busy/", fetcher, chromium, settle_seconds=1.0)
    elapsed = time.perf_counter() - started
    assert colours_by_role(extraction)["primary"] == "#CA8A04"
    assert elapsed < 15, f"took {elapsed:.1f} s"


def test_a_page_reaching_for_loopback_is_refused_and_never_gets_there(
    base_url: str, chromium: Browser
) -> None:
    """The page is served as `localhost` (allowed by name); its script and markup aim at the
    trap on 127.0.0.1 (fetch, image, WebSocket, beacon, preconnect, iframe): the service's
    fetcher refuses them and nothing else reaches the network."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    offered: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                offered.append(listener.accept()[1])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    policy = FetchPolicy.from_settings(Settings(fetch_allow="localhost"), 5 * 1024 * 1024)
    site = base_url.replace("127.0.0.1", "localhost")
    try:
        extraction = rendered(
            f"{site}/loopback/?trap={port}", lambda url: fetch(url, policy), chromium
        )
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(2)
        listener.close()
    assert colours_by_role(extraction)["primary"] == "#EA580C"
    assert urlsplit(extraction.style["url"]).hostname == "localhost"
    assert offered == [], "the page reached the loopback service"


def test_a_page_past_the_time_budget_fails_with_a_clear_message(
    base_url: str, fetcher: Fetcher, chromium: Browser
) -> None:
    started = time.perf_counter()
    with pytest.raises(RenderFailed, match=r"could not be rendered within the 3 s budget"):
        rendered(f"{base_url}/hang/", fetcher, chromium, seconds=3, settle_seconds=1)
    assert time.perf_counter() - started < 10
    assert rendered(f"{base_url}/bare/", fetcher, chromium).style["name"] == "127.0.0.1"


def test_the_browser_is_started_again_after_it_died(
    base_url: str, fetcher: Fetcher, chromium: Browser
) -> None:
    rendered(f"{base_url}/bare/", fetcher, chromium)
    launches = chromium.launches

    async def kill(playwright_browser: object) -> None:
        await playwright_browser.close()  # type: ignore[attr-defined]

    chromium.run(kill, 10)  # as if it had crashed: the connection is gone
    assert rendered(f"{base_url}/inline/", fetcher, chromium).style["name"] == "Meadow & Moss"
    assert chromium.launches == launches + 1


def test_without_chromium_the_text_path_is_used_and_said(base_url: str) -> None:
    settings = Settings(fetch_allow="127.0.0.1", chromium="/nonexistent/chromium")
    extractor = StyleExtractor(settings)
    url = f"{base_url}/inline/"
    extraction = extractor.extract(PipelineRegistry(), url, RecordingControl())
    assert extraction.engine == "text"
    assert extraction.style["name"] == "Meadow & Moss"
    assert extraction.notes == [
        "read from the page's HTML and CSS only: Chromium is not installed "
        "(/nonexistent/chromium not found)"
    ]


def test_a_browser_that_cannot_start_falls_back_to_text(base_url: str, fetcher: Fetcher) -> None:
    broken = Browser("/bin/false")
    try:
        extraction = extract_style(f"{base_url}/inline/", fetcher, image_type, broken)
    finally:
        broken.close()
    assert extraction.engine == "text"
    assert extraction.notes[0].startswith("read from the page's HTML and CSS only: Chromium")


# What the browser's processes may see (issue 31 M9)


def _descendants(root: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(
                    (entry / "stat").read_text().split(") ")[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def test_the_browser_sees_none_of_the_workers_settings_or_credentials(
    base_url: str, fetcher: Fetcher, chromium: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser of its own, started after the worker's environment holds secrets."""
    monkeypatch.setenv("SFUMATO_DATABASE_URL", "postgresql://app:hunter2@db/sfumato")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-marker")
    own = Browser(chromium.executable)
    try:
        extraction = extract_style(f"{base_url}/inline/", fetcher, image_type, own)
        assert extraction.engine == "rendered"
        environments = {}
        for pid in _descendants(os.getpid()):
            try:
                command = (Path(f"/proc/{pid}/cmdline").read_bytes()).split(b"\0")[0]
                environment = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if command.endswith((b"chromium", b"chrome")) or b"/chromium/" in command:
                environments[pid] = environment
    finally:
        own.close()
    assert environments, "no browser process found"
    for environment in environments.values():
        assert b"hunter2" not in environment and b"aws-secret-marker" not in environment
        assert not any(name.startswith(b"SFUMATO_") for name in environment.split(b"\0"))


@pytest.mark.parametrize(
    ("setting", "root", "attempts"),
    [
        ("auto", False, [[], ["--no-sandbox"]]),  # sandboxed first, said when it cannot be
        ("auto", True, [["--no-sandbox"]]),  # Chromium refuses to sandbox root
        ("required", False, [[]]),
        ("required", True, []),  # no rendering at all
        ("off", False, [["--no-sandbox"]]),
    ],
)
def test_the_sandbox_is_tried_wherever_it_can_run(
    setting: str, root: bool, attempts: list[list[str]]
) -> None:
    assert sandbox_attempts(setting, root) == attempts
