"""The rendered path: the page rendered in headless Chromium at a desktop and a phone width, read
from what the browser computed, with colours weighted by what a visitor sees.

Every request the page makes (the page itself, its scripts, styles, fonts, images, XHR) is
answered through the caller's fetcher by request interception, so the fetcher's address checks,
size and time bounds apply to all of them; a request the fetcher refuses fails in the page. The
browser's own network is locked (`browser.py`). One extraction has a `RenderBudget`: its time,
its requests and bytes; past the time, or when the page crashes (JavaScript's heap is capped),
it fails with `RenderFailed`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import numpy as np
from PIL import Image
from selectolax.lexbor import LexborHTMLParser

from pipelines.styles.browser import Browser, RenderBudget
from pipelines.styles.colours import CANVAS, Gradient, Rgb, gradients_in
from pipelines.styles.document import meta_content
from pipelines.styles.images import MAX_IMAGE_BYTES, BrandImage, ImageCheck, accepted, is_svg
from pipelines.styles.palette import (
    BASE_WEIGHT,
    BUTTONISH,
    MERGE_DISTANCE,
    PaletteBuilder,
    oklab_many,
    role_hint,
)
from pipelines.styles.reading import PageReading
from pipelines.styles.sources import FetchedDocument, Fetcher, SiteUnavailable, fetch_page
from pipelines.styles.typography import google_font_families

if TYPE_CHECKING:
    from playwright.async_api import Browser as PlaywrightBrowser
    from playwright.async_api import BrowserContext, Page, Route, ViewportSize

DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
# The part of a long page that is read and screenshotted, in CSS pixels.
MAX_PAGE_HEIGHT = 6000
MAX_ELEMENTS = 3000
MAX_LOGO_CANDIDATES = 3
SURROUNDING_CHARS = 300
# A logo is drawn with its longest side this many CSS pixels, at twice the pixel density.
LOGO_SIZE = 256
# Screenshots are compared with the candidate colours at this width (nearest-neighbour).
SHOT_WIDTH = 320
# How much a use's share of the page adds to its weight, and how much being seen adds.
AREA_WEIGHT = 6.0
VISIBLE_WEIGHT = 12.0
PHONE_FACTOR = 0.5
_SCRIPTS = resources.files("pipelines.styles").joinpath("js")
READ_PAGE_JS = _SCRIPTS.joinpath("read_page.js").read_text()
UA_DEFAULTS_JS = _SCRIPTS.joinpath("ua_defaults.js").read_text()
# The element types whose browser defaults are looked up; any other counts as a `span`.
DEFAULT_TAGS = (
    "html", "body", "div", "span", "p", "a", "h1", "h2", "h3", "h4", "h5", "h6", "button",
    "input", "select", "textarea", "label", "ul", "ol", "li", "dl", "dt", "dd", "nav", "header",
    "footer", "main", "section", "article", "aside", "figure", "figcaption", "img", "strong",
    "em", "b", "i", "u", "s", "small", "mark", "code", "pre", "kbd", "samp", "blockquote", "q",
    "cite", "abbr", "time", "address", "table", "thead", "tbody", "tr", "th", "td", "caption",
    "hr", "form", "fieldset", "legend", "details", "summary", "sup", "sub", "del", "ins", "svg",
    "g", "path", "circle", "rect", "ellipse", "line", "polygon", "polyline", "text"
)  # fmt: skip


class RenderFailed(SiteUnavailable):
    """The page could not be rendered within the extraction's budget; the message says why."""


@dataclass
class _Requests:
    """Answers the page's requests through the fetcher, within the budget; keeps the answers
    (by requested and final URL) so the brand images are not fetched twice."""

    fetcher: Fetcher
    browser: Browser
    budget: RenderBudget
    cache: dict[str, FetchedDocument] = field(default_factory=dict)
    count: int = 0
    bytes: int = 0

    def keep(self, requested: str, document: FetchedDocument) -> None:
        self.cache[requested] = document
        self.cache[document.url] = document

    async def fetch(self, url: str) -> FetchedDocument | None:
        document = self.cache.get(url)
        if document is not None:
            return document
        if self.count >= self.budget.max_requests or self.bytes >= self.budget.max_bytes:
            return None
        self.count += 1
        loop = asyncio.get_running_loop()
        try:
            document = await loop.run_in_executor(self.browser.fetch_pool, self.fetcher, url)
        except Exception:  # refused, unreachable, too large, too slow: the page goes without
            return None
        self.bytes += len(document.body)
        self.keep(url, document)
        return document

    async def answer(self, route: Route) -> None:
        from playwright.async_api import Error

        request = route.request
        try:
            if request.method != "GET" or not request.url.startswith(("http://", "https://")):
                await route.abort("blockedbyclient")
                return
            document = await self.fetch(request.url)
            if document is None:
                await route.abort("failed")
            elif document.url != request.url:
                # Relative URLs in what was redirected to resolve against where it is.
                await route.fulfill(status=302, headers={"location": document.url})
            else:
                headers = {"access-control-allow-origin": "*"}
                if document.content_type:
                    headers["content-type"] = _with_charset(document.content_type, document.body)
                await route.fulfill(status=200, headers=headers, body=document.body)
        except Error:
            pass  # the page or its context closed meanwhile


def _with_charset(content_type: str, body: bytes) -> str:
    """Text that names no charset and is valid UTF-8 is declared UTF-8, as the text-only path
    reads it (a browser would guess windows-1252 and show mojibake)."""
    if not content_type.startswith("text/") or "charset" in content_type.lower():
        return content_type
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return content_type
    return f"{content_type}; charset=utf-8"


async def _browser_defaults(context: BrowserContext, browser: Browser) -> dict[str, Any]:
    """The browser's own styles per element type, looked up once per browser."""
    if browser.defaults is None:
        page = await context.new_page()
        try:
            await page.set_content("<!doctype html><html><body></body></html>")
            browser.defaults = await page.evaluate(UA_DEFAULTS_JS, list(DEFAULT_TAGS))
        finally:
            await page.close()
    return browser.defaults


def read_rendered(
    url: str, fetcher: Fetcher, check: ImageCheck, browser: Browser, budget: RenderBudget
) -> PageReading:
    """Render the page at `url` and read it. Raises `SiteUnavailable` when the page cannot be
    fetched (the same message as the text-only path), `RenderFailed` past the budget, and
    `BrowserUnavailable` when Chromium cannot start."""
    page = fetch_page(url, fetcher)

    async def work(chromium: PlaywrightBrowser) -> PageReading:
        requests = _Requests(fetcher, browser, budget)
        requests.keep(url, page)
        return await _render(chromium, page.url, requests, check, budget)

    return browser.run(work, budget.seconds)


async def _render(
    chromium: PlaywrightBrowser,
    url: str,
    requests: _Requests,
    check: ImageCheck,
    budget: RenderBudget,
) -> PageReading:
    from playwright.async_api import Error
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    context = await chromium.new_context(
        viewport=DESKTOP,
        device_scale_factor=2,
        service_workers="block",
        accept_downloads=False,
        reduced_motion="reduce",
        locale="en-US",
    )
    crashed = asyncio.Event()
    try:
        await context.route("**/*", requests.answer)
        # Playwright's own waits end with the budget too; the deadline below says why.
        context.set_default_timeout(budget.seconds * 1000)
        page = await context.new_page()
        page.on("crash", lambda _: crashed.set())
        page.on("dialog", lambda dialog: asyncio.ensure_future(_dismiss(dialog)))
        page.on("popup", lambda popup: asyncio.ensure_future(_close(popup)))
        async with asyncio.timeout(budget.seconds):
            return await _read(context, page, url, requests, check, budget)
    except (TimeoutError, PlaywrightTimeout):
        raise RenderFailed(
            f"{url} could not be rendered within the {budget.seconds:g} s budget"
        ) from None
    except Error as error:
        if not chromium.is_connected():
            raise  # the browser died: `Browser.run` starts a new one and tries again
        if crashed.is_set():
            raise RenderFailed(
                f"{url} crashed its browser tab (a page may use {requests.browser.heap_mb} MiB "
                "of JavaScript memory)"
            ) from None
        raise RenderFailed(f"{url} could not be rendered: {_first_line(error)}") from None
    finally:
        with contextlib.suppress(Error, TimeoutError):
            await asyncio.wait_for(context.close(), 10)


async def _dismiss(dialog: Any) -> None:
    """JavaScript dialogs (alert, confirm, prompt, beforeunload) are dismissed at once."""
    with contextlib.suppress(Exception):  # the page may be gone already
        await dialog.dismiss()


async def _close(popup: Page) -> None:
    """Windows the page opens are closed: only the page itself is read."""
    with contextlib.suppress(Exception):
        await popup.close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


async def _read(
    context: BrowserContext,
    page: Page,
    url: str,
    requests: _Requests,
    check: ImageCheck,
    budget: RenderBudget,
) -> PageReading:
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    await page.goto(url, wait_until="domcontentloaded")
    # A page that keeps the network busy is read as it is when the wait ends.
    with contextlib.suppress(PlaywrightTimeout):
        await page.wait_for_load_state("networkidle", timeout=budget.settle_seconds * 1000)
    options = {
        "maxElements": MAX_ELEMENTS,
        "maxPageHeight": MAX_PAGE_HEIGHT,
        "maxLogoCandidates": MAX_LOGO_CANDIDATES,
        "buttonish": BUTTONISH.pattern,
        "waitForFonts": True,
        "defaults": await _browser_defaults(context, requests.browser),
    }
    desktop = await page.evaluate(READ_PAGE_JS, options)
    shot_options: dict[str, Any] = {"type": "png", "scale": "css", "animations": "disabled"}
    first_screen = await page.screenshot(**shot_options)
    height = min(int(desktop["page"]["height"]), MAX_PAGE_HEIGHT)
    whole_page = await page.screenshot(
        full_page=True,
        clip={"x": 0, "y": 0, "width": int(desktop["page"]["width"]), "height": height},
        **shot_options,
    )
    html = LexborHTMLParser(await page.content())
    logo = await _logo(context, desktop["logos"], requests, check)
    images = await _images(html, desktop.get("hero"), url, logo, requests, check)
    await page.set_viewport_size(PHONE)
    phone = await page.evaluate(READ_PAGE_JS, {**options, "waitForFonts": False})
    phone_screen = await page.screenshot(**shot_options)

    palette = PaletteBuilder()
    _add_uses(palette, desktop, 1.0)
    _add_uses(palette, phone, PHONE_FACTOR)
    for name, red, green, blue in desktop["variables"]:
        hint = role_hint(name)
        palette.add(Rgb(red, green, blue), 1.0 if hint else 0.2, "variable", hint)
    gradients = _gradients(desktop["gradients"], palette)
    # The canvas is seen too (not a colour of the palette unless the page names it): a page that
    # paints no background of its own shows the browser's white, however dark a header or footer
    # it declares.
    declared = list(palette.uses)
    candidates = declared if CANVAS in declared else [*declared, CANVAS]
    seen = {
        colour: 2 * first + whole + PHONE_FACTOR * small
        for colour, first, whole, small in zip(
            candidates,
            visible_shares(first_screen, candidates),
            visible_shares(whole_page, candidates),
            visible_shares(phone_screen, candidates),
            strict=True,
        )
    }
    for colour in declared:
        if seen[colour] > 0:
            palette.add(colour, VISIBLE_WEIGHT * seen[colour], "visible")
    return PageReading(
        url=url,
        html=html,
        palette=palette,
        gradients=gradients,
        fonts_by_role=desktop["fonts"],
        loaded_fonts=google_font_families(html) + desktop["loadedFonts"],
        page_background=_page_background(palette, seen),
        logo=logo,
        images=images,
    )


def _add_uses(palette: PaletteBuilder, reading: dict[str, Any], factor: float) -> None:
    """Each colour's uses by kind (backgrounds of buttons count as `button`, text in links as
    `link`): the kind's base weight, more for more elements and a larger share of the page,
    double for text in the colour set on the body (as the text-only path counts root rules)."""
    page = reading["page"]
    page_area = max(1.0, float(page["width"]) * float(page["height"]))
    root_text = reading["rootText"]
    totals: dict[tuple[Rgb, str], list[float]] = {}
    for red, green, blue, usage, context, count, area, _first in reading["uses"]:
        kind = usage
        if usage == "background" and context == "button":
            kind = "button"
        elif usage == "text" and context == "link":
            kind = "link"
        total = totals.setdefault((Rgb(red, green, blue), kind), [BASE_WEIGHT[usage], 0, 0])
        total[1] += count
        total[2] += area
    for (colour, kind), (base, count, area) in totals.items():
        weight = base * (1 + math.log1p(min(count, 50)))
        weight += base * AREA_WEIGHT * min(area / page_area, 1.5)
        if kind == "text" and [colour.red, colour.green, colour.blue] == root_text:
            weight *= 2
        palette.add(colour, factor * weight, kind)


def _gradients(found: list[tuple[str, float]], palette: PaletteBuilder) -> list[Gradient]:
    """The page's gradients, largest first; their stops join the palette lightly."""
    gradients: list[Gradient] = []
    for value, _area in sorted(found, key=lambda item: -item[1]):
        for gradient in gradients_in(value):
            gradients.append(gradient)
            for colour, _ in gradient.stops:
                palette.add(colour, 0.5, "gradient")
    return gradients


def visible_shares(png: bytes, candidates: list[Rgb]) -> list[float]:
    """For each candidate colour, the share of the screenshot's pixels nearest to it (within the
    palette's merge distance in OKLab); pixels like no candidate (photos) count for none."""
    if not candidates:
        return []
    with Image.open(io.BytesIO(png)) as opened:
        shot = opened.convert("RGB")
    height = max(1, round(shot.height * SHOT_WIDTH / max(1, shot.width)))
    small = np.asarray(shot.resize((SHOT_WIDTH, height), Image.Resampling.NEAREST))
    pixels = small.reshape(-1, 3).astype(np.int64)
    packed = (pixels[:, 0] << 16) | (pixels[:, 1] << 8) | pixels[:, 2]
    values, counts = np.unique(packed, return_counts=True)
    colours = np.stack([(values >> 16) & 255, (values >> 8) & 255, values & 255], axis=1)
    seen_lab = oklab_many(colours)
    candidate_lab = oklab_many(np.array([[c.red, c.green, c.blue] for c in candidates]))
    distances = np.linalg.norm(seen_lab[:, None, :] - candidate_lab[None, :, :], axis=2)
    nearest = distances.argmin(axis=1)
    close = distances[np.arange(len(values)), nearest] < MERGE_DISTANCE
    shares = np.bincount(nearest[close], weights=counts[close], minlength=len(candidates))
    return [float(share) / float(counts.sum()) for share in shares]


def _page_background(palette: PaletteBuilder, seen: dict[Rgb, float]) -> Rgb | None:
    """The background colour a visitor sees most of: a declared one, or the canvas's white."""
    backgrounds = [c for c, swatch in palette.uses.items() if swatch.usage["background"] > 0]
    best = max([*backgrounds, CANVAS], key=lambda colour: seen.get(colour, 0.0))
    if seen.get(best, 0.0) > 0:
        return best
    return palette.heaviest("background") if backgrounds else None


async def _raster(context: BrowserContext, svg: bytes, width: float, height: float) -> bytes | None:
    """An SVG drawn by the browser as an image (where no script of it runs), as a PNG with a
    transparent background; None if it would not draw."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    longest = max(width, height, 1.0)
    scale = LOGO_SIZE / longest if width and height else 1.0
    shown_width = round(width * scale) if width and height else LOGO_SIZE
    sizing = f'width="{shown_width}"' + (f' height="{round(height * scale)}"' if height else "")
    source = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    scratch = await context.new_page()
    try:
        await scratch.set_content(
            f'<body style="margin:0;background:transparent"><img id="logo" {sizing} '
            f'src="{source}"></body>'
        )
        # `decode()` fails for what is no image (an HTML page that mentions `<svg`).
        drawn = await scratch.evaluate(
            "document.getElementById('logo').decode().then(() => true, () => false)"
        )
        if not drawn:
            return None
        return await scratch.locator("#logo").screenshot(
            omit_background=True, type="png", timeout=5000
        )
    except PlaywrightTimeout:
        return None
    finally:
        await scratch.close()


async def _logo(
    context: BrowserContext,
    candidates: list[dict[str, Any]],
    requests: _Requests,
    check: ImageCheck,
) -> BrandImage | None:
    """The first logo candidate that gives an accepted image: a logo-like `<img>`, `<svg>` or
    background image (header first), then the touch icon, the icon, og:image. SVG is drawn by
    the browser into a PNG."""
    for candidate in candidates:
        url = candidate.get("url")
        if candidate["kind"] == "svg":
            body: bytes | None = candidate["markup"].encode()
        else:
            document = await requests.fetch(url) if url else None
            body = document.body if document is not None else None
            if document is not None and not is_svg(document.content_type, document.body):
                image = accepted("logo", document.url, document.body, check, candidate["alt"])
                if image is not None:
                    return image
                continue
            url = document.url if document is not None else url
        if body is None or len(body) > MAX_IMAGE_BYTES:
            continue
        raster = await _raster(context, body, candidate["width"], candidate["height"])
        image = accepted("logo", url, raster, check, candidate["alt"]) if raster else None
        if image is not None:
            return image
    return None


async def _images(
    html: LexborHTMLParser,
    hero: dict[str, Any] | None,
    base: str,
    logo: BrandImage | None,
    requests: _Requests,
    check: ImageCheck,
) -> list[BrandImage]:
    """The hero image (with its alt and the hero's text) and the social image (og:image or
    twitter:image, with its alt and the page's title), each once; raster images only."""
    wanted: list[tuple[str, str, str, str]] = []
    if hero is not None and hero.get("url"):
        wanted.append(("hero", hero["url"], hero["alt"], hero["context"][:SURROUNDING_CHARS]))
    social = meta_content(html, 'meta[property="og:image"]', 'meta[name="twitter:image"]')
    if social:
        alt = meta_content(html, 'meta[property="og:image:alt"]', 'meta[name="twitter:image:alt"]')
        title = meta_content(html, 'meta[property="og:title"]', 'meta[name="description"]') or ""
        wanted.append(("social", urljoin(base, social), alt or "", title[:SURROUNDING_CHARS]))
    images: list[BrandImage] = []
    seen = {logo.url} if logo is not None else set()
    for role, url, alt, context in wanted:
        if url in seen or url.startswith("data:"):
            continue
        seen.add(url)
        document = await requests.fetch(url)
        if document is None or is_svg(document.content_type, document.body):
            continue
        image = accepted(role, document.url, document.body, check, alt, context)
        if image is not None:
            images.append(image)
    return images
