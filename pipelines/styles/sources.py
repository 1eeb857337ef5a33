"""Fetching a site's page and the documents it links to, through a caller-supplied fetcher.

The pipeline never opens connections itself: the worker passes the project's SSRF-safe fetcher
(`core.fetch.fetch` bound to a policy) and tests pass a loopback one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urljoin

import tinycss2
from selectolax.lexbor import LexborHTMLParser

MAX_STYLESHEETS = 12
MAX_CSS_BYTES = 1_500_000
MAX_IMPORT_DEPTH = 2


class FetchedDocument(Protocol):
    """What a fetch returns; `core.fetch.Fetched` has this shape. `url` is the final URL."""

    @property
    def url(self) -> str: ...

    @property
    def content_type(self) -> str | None: ...

    @property
    def body(self) -> bytes: ...


Fetcher = Callable[[str], FetchedDocument]


class SiteUnavailable(Exception):
    """The page could not be fetched or is not HTML; the message says why."""


@dataclass
class Site:
    url: str
    html: LexborHTMLParser
    stylesheets: list[str] = field(default_factory=list)


def _decode(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def fetch_page(url: str, fetcher: Fetcher) -> FetchedDocument:
    try:
        page = fetcher(url)
    except Exception as exc:
        raise SiteUnavailable(f"{url} could not be fetched: {exc}") from exc
    content_type = (page.content_type or "").lower()
    if content_type and "html" not in content_type:
        raise SiteUnavailable(f"{url} is not an HTML page (it is {content_type})")
    if not page.body.strip():
        raise SiteUnavailable(f"{url} returned an empty page")
    return page


def try_fetch(url: str, fetcher: Fetcher) -> FetchedDocument | None:
    """A subresource that fails is skipped: the style is built from what could be read."""
    try:
        return fetcher(url)
    except Exception:
        return None


def _imports(css: str) -> list[str]:
    if "@import" not in css:
        return []
    urls: list[str] = []
    for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if rule.type != "at-rule" or rule.lower_at_keyword != "import":
            continue
        for token in rule.prelude:
            if token.type in ("url", "string"):
                urls.append(token.value)
                break
            if token.type == "function" and token.lower_name == "url":
                urls.extend(arg.value for arg in token.arguments if arg.type == "string")
                break
    return urls


def load_site(url: str, fetcher: Fetcher) -> Site:
    """The page, its linked and imported stylesheets (bounded) and its inline `<style>`s, in
    document order so later rules win as in a browser."""
    page = fetch_page(url, fetcher)
    html = LexborHTMLParser(_decode(page.body))
    site = Site(url=page.url, html=html)
    budget = {"sheets": MAX_STYLESHEETS, "bytes": MAX_CSS_BYTES}
    seen: set[str] = set()

    def add_css(css: str, base: str, depth: int) -> None:
        if depth < MAX_IMPORT_DEPTH:
            for imported in _imports(css):
                add_linked(urljoin(base, imported), depth + 1)
        site.stylesheets.append(css)

    def add_linked(sheet_url: str, depth: int) -> None:
        if sheet_url in seen or budget["sheets"] <= 0 or budget["bytes"] <= 0:
            return
        seen.add(sheet_url)
        budget["sheets"] -= 1
        document = try_fetch(sheet_url, fetcher)
        if document is None:
            return
        body = document.body[: budget["bytes"]]
        budget["bytes"] -= len(body)
        add_css(_decode(body), document.url, depth)

    for node in html.css("link[rel][href], style"):
        if node.tag == "style":
            add_css(node.text(deep=True), site.url, 0)
            continue
        rel = (node.attributes.get("rel") or "").lower().split()
        href = node.attributes.get("href") or ""
        if "stylesheet" in rel and href and "fonts.googleapis.com" not in href:
            add_linked(urljoin(site.url, href), 0)
    return site
