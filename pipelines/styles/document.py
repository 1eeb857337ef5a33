"""Reading a page's document (the server's HTML, or the browser's DOM after scripts ran): text,
meta tags, the site's name, tagline and copy."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

# Between a title's brand and its tagline: a spaced dash, bar or dot, a bar or dot unspaced, or a
# colon followed by a space ("Nocturne Audio: headphones for the night shift").
_TITLE_SEPARATORS = re.compile("\\s+[|\\-\u2013\u2014\u00b7:]\\s+|\\s*[|\u00b7]\\s*|:\\s+")


def node_text(node: LexborNode | None) -> str:
    return " ".join((node.text(deep=True) if node is not None else "").split())


def meta_content(html: LexborHTMLParser, *selectors: str) -> str | None:
    """The `content` of the first of the meta tags that has one."""
    for selector in selectors:
        node = html.css_first(selector)
        content = " ".join((node.attributes.get("content") or "").split()) if node else ""
        if content:
            return content
    return None


def _host_name(url: str) -> str:
    host = (urlsplit(url).hostname or "site").removeprefix("www.")
    return host.split(".")[0].capitalize() if not host.replace(".", "").isdigit() else host


def site_name(html: LexborHTMLParser, url: str) -> str:
    """og:site_name, application-name, else the title's brand segment, else the host."""
    named = meta_content(html, 'meta[property="og:site_name"]', 'meta[name="application-name"]')
    if named:
        return named[:100]
    title = node_text(html.css_first("title"))
    segments = [part.strip() for part in _TITLE_SEPARATORS.split(title) if part.strip()]
    if not segments:
        return _host_name(url)
    host = (urlsplit(url).hostname or "").replace("-", "")
    for segment in segments:
        compact = re.sub(r"[^a-z0-9]", "", segment.lower())
        if compact and compact in host:
            return segment[:100]
    return min(segments, key=len)[:100]


def tagline(html: LexborHTMLParser, name: str) -> str | None:
    """The hero's heading (or the page's first), else og:title, when it is not just the name."""
    hero = next(
        (
            html.css_first(s)
            for s in ("[class*=hero] h1", "h1", "[role=heading]")
            if html.css_first(s)
        ),
        None,
    )
    for candidate in (node_text(hero), meta_content(html, 'meta[property="og:title"]') or ""):
        if candidate and candidate.casefold() != name.casefold():
            return candidate[:300]
    return None


def description(html: LexborHTMLParser) -> str | None:
    found = meta_content(html, 'meta[name="description"]', 'meta[property="og:description"]')
    return found[:1000] if found else None


def copy_texts(
    html: LexborHTMLParser, name: str, line: str | None, summary: str | None
) -> list[str]:
    """The page's words for tone: name, tagline, description, headings, paragraphs, buttons."""
    texts = [name, line or "", summary or ""]
    texts += [node_text(node) for node in html.css("h1, h2, h3, p, li, button")[:60]]
    return [text for text in dict.fromkeys(texts) if len(text) > 2]
