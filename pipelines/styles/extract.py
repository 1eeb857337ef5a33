"""Brand style extraction: a website in, a StyleDetail-shaped dict (SPEC.md "Style") out."""

from __future__ import annotations

import math
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from pipelines.styles.css import (
    ROOT_SELECTORS,
    Gradient,
    Rgb,
    Rule,
    colours_in,
    custom_properties,
    gradients_in,
    parse_rules,
    resolve_vars,
    selector_matches,
)
from pipelines.styles.palette import (
    PaletteBuilder,
    chroma,
    colour_name,
    image_colours,
    oklab,
    role_hint,
)
from pipelines.styles.schema import validate_style
from pipelines.styles.sources import Fetcher, load_site, try_fetch
from pipelines.styles.tone import detect_tone
from pipelines.styles.typography import declarations_of_attribute, typography

MAX_ELEMENTS = 3000
MAX_GRADIENTS = 3
MAX_IMAGE_BYTES = 5 * 1024 * 1024
# Logo-like images tried before the icon fallbacks: each is a fetch.
MAX_LOGO_CANDIDATES = 3
# Text kept around a brand image, for the asset search to match it by.
SURROUNDING_CHARS = 300
USAGE_BY_PROPERTY = {
    "background": "background",
    "background-color": "background",
    "background-image": "background",
    "color": "text",
    "fill": "fill",
    "stroke": "fill",
    "outline-color": "border",
}
BASE_WEIGHT = {"background": 3.0, "text": 2.0, "border": 1.0, "fill": 1.0}
BUTTONISH = re.compile(r"\b(btn|button|cta)\b|btn-|button-|cta-", re.IGNORECASE)
_VAR_NAME = re.compile(r"var\(\s*(--[\w-]+)")
_TITLE_SEPARATORS = re.compile("\\s+[|\\-\u2013\u2014\u00b7:]\\s+|\\s*[|\u00b7]\\s*")


@dataclass(frozen=True)
class BrandImage:
    """An image the caller re-hosts into the style's folder; `url` is None for inline SVG."""

    role: str
    url: str | None
    content_type: str | None
    body: bytes
    alt_text: str = ""
    surrounding_text: str = ""


@dataclass
class Extraction:
    style: dict[str, Any]
    logo: BrandImage | None = None
    # The hero and social images, not the logo (see `brand_images`).
    images: list[BrandImage] = field(default_factory=list)

    @property
    def brand_images(self) -> list[BrandImage]:
        """What seeds the style's linked folder: the logo first, then hero and social."""
        return ([self.logo] if self.logo is not None else []) + self.images


def _text(node: LexborNode | None) -> str:
    return " ".join((node.text(deep=True) if node is not None else "").split())


def _meta(html: LexborHTMLParser, *selectors: str) -> str | None:
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
    named = _meta(html, 'meta[property="og:site_name"]', 'meta[name="application-name"]')
    if named:
        return named[:100]
    title = _text(html.css_first("title"))
    segments = [part.strip() for part in _TITLE_SEPARATORS.split(title) if part.strip()]
    if not segments:
        return _host_name(url)
    host = (urlsplit(url).hostname or "").replace("-", "")
    for segment in segments:
        compact = re.sub(r"[^a-z0-9]", "", segment.lower())
        if compact and compact in host:
            return segment[:100]
    return min(segments, key=len)[:100]


def _tagline(html: LexborHTMLParser, name: str) -> str | None:
    """The hero's heading (or the page's first), else og:title, when it is not just the name."""
    hero = next(
        (
            html.css_first(s)
            for s in ("[class*=hero] h1", "h1", "[role=heading]")
            if html.css_first(s)
        ),
        None,
    )
    for candidate in (_text(hero), _meta(html, 'meta[property="og:title"]') or ""):
        if candidate and candidate.casefold() != name.casefold():
            return candidate[:300]
    return None


class _ElementIndex:
    """Elements by tag, class and id, so each rule is matched against a few candidates."""

    def __init__(self, html: LexborHTMLParser) -> None:
        self.all = html.css("*")[:MAX_ELEMENTS]
        self.by_key: dict[str, list[LexborNode]] = defaultdict(list)
        for node in self.all:
            self.by_key[node.tag or ""].append(node)
            for css_class in (node.attributes.get("class") or "").split():
                self.by_key["." + css_class].append(node)
            if node.attributes.get("id"):
                self.by_key["#" + (node.attributes.get("id") or "")].append(node)

    def matching(self, selector: str) -> list[LexborNode]:
        if selector in ROOT_SELECTORS:
            return self.by_key["html"] + self.by_key["body"]
        last = re.split(r"[\s>+~]+", selector.strip())[-1]
        key = re.search(r"[.#](?:\\.|[\w-])+", last)
        tag = re.match(r"[a-zA-Z][\w-]*", last)
        if key:
            candidates = self.by_key.get(key.group(0).replace("\\", ""), [])
        elif tag:
            candidates = self.by_key.get(tag.group(0).lower(), [])
        else:
            candidates = self.all
        return [node for node in candidates if selector_matches(selector, node)]


def _context(nodes: list[LexborNode]) -> str | None:
    for node in nodes:
        classes = (node.attributes.get("class") or "") + " " + (node.attributes.get("role") or "")
        if node.tag == "button" or BUTTONISH.search(classes):
            return "button"
    return "link" if any(node.tag == "a" for node in nodes) else None


def _usage(property_name: str) -> str | None:
    if property_name in USAGE_BY_PROPERTY:
        return USAGE_BY_PROPERTY[property_name]
    if property_name.startswith("border") and "radius" not in property_name:
        return "border"
    return None


def _collect_colours(
    rules: list[Rule],
    html: LexborHTMLParser,
    variables: dict[str, str],
    palette: PaletteBuilder,
) -> list[Gradient]:
    index = _ElementIndex(html)
    applied: list[tuple[dict[str, str], list[LexborNode], bool]] = []
    for rule in rules:
        if any(_usage(name) for name in rule.declarations):
            root = rule.selector in ROOT_SELECTORS
            applied.append((rule.declarations, index.matching(rule.selector), root))
    for node in index.all:
        inline = declarations_of_attribute(node)
        if inline:
            applied.append((inline, [node], node.tag in ("html", "body")))
    gradients: list[Gradient] = []
    for decls, nodes, root in applied:
        # Rules nothing on the page uses (utility CSS ships thousands) count for little.
        reach = (1 + math.log1p(min(len(nodes), 50))) if nodes or root else 0.3
        context = _context(nodes)
        for name, raw in decls.items():
            usage = _usage(name)
            if usage is None:
                continue
            hints = [h for h in map(role_hint, _VAR_NAME.findall(raw)) if h]
            value = resolve_vars(raw, variables)
            weight = BASE_WEIGHT[usage] * reach * (2 if root else 1)
            if usage == "background" and context == "button":
                usage = "button"
            elif usage == "text" and context == "link":
                usage = "link"
            found = gradients_in(value)
            gradients.extend(found)
            if found:
                for gradient in found:
                    for colour, _ in gradient.stops:
                        palette.add(colour, 0.5, "gradient")
                continue
            for colour in colours_in(value):
                palette.add(colour, weight, usage, hints[0] if hints else None)
    # A theme's named variables count even where the page's own markup does not use them.
    for name, value in variables.items():
        hint = role_hint(name)
        for colour in colours_in(resolve_vars(value, variables)):
            palette.add(colour, 1.0 if hint else 0.2, "variable", hint)
    return gradients


def _gradient_items(gradients: list[Gradient]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for gradient in gradients:
        key = tuple(colour.hex for colour, _ in gradient.stops)
        if key in seen or len(items) >= MAX_GRADIENTS:
            continue
        seen.add(key)
        first, last = gradient.stops[0][0], gradient.stops[-1][0]
        items.append(
            {
                "type": "gradient",
                "name": f"{colour_name(first)} to {colour_name(last)}"[:50],
                "gradientSubtype": gradient.subtype,
                "stops": [
                    {"hex": colour.hex, "positionPct": position}
                    for colour, position in gradient.stops
                ],
                "angleDeg": gradient.angle_deg,
                "role": "background",
            }
        )
    return items


def _is_logo(node: LexborNode) -> bool:
    attributes = node.attributes
    text = " ".join(
        attributes.get(name) or "" for name in ("class", "id", "alt", "src", "aria-label")
    )
    parent = node.parent
    parent_text = (
        " ".join((parent.attributes.get(name) or "") for name in ("class", "id", "aria-label"))
        if parent is not None
        else ""
    )
    return "logo" in (text + " " + parent_text).lower()


def _fetch_image(
    url: str, role: str, fetcher: Fetcher, alt: str = "", context: str = ""
) -> BrandImage | None:
    if url.startswith("data:"):
        return None
    document = try_fetch(url, fetcher)
    if document is None or not document.body or len(document.body) > MAX_IMAGE_BYTES:
        return None
    content_type = (document.content_type or "").split(";")[0].strip() or None
    if content_type and not content_type.startswith("image/"):
        return None
    return BrandImage(role, document.url, content_type, document.body, alt, context)


def find_logo(html: LexborHTMLParser, base: str, fetcher: Fetcher) -> BrandImage | None:
    """A logo-like `<img>`/`<svg>` (header first), else apple-touch-icon, else og:image."""
    header_nodes = html.css("header img, header svg, nav img, nav svg")
    candidates = [n for n in header_nodes if _is_logo(n)]
    candidates += [n for n in html.css("img, svg") if _is_logo(n) and n not in candidates]
    for node in candidates[:MAX_LOGO_CANDIDATES]:
        alt = node.attributes.get("alt") or node.attributes.get("aria-label") or ""
        if node.tag == "svg":
            return BrandImage("logo", None, "image/svg+xml", (node.html or "").encode(), alt)
        src = node.attributes.get("src")
        image = _fetch_image(urljoin(base, src), "logo", fetcher, alt) if src else None
        if image is not None:
            return image
    for selector in ('link[rel~="apple-touch-icon"]', 'meta[property="og:image"]'):
        link = html.css_first(selector)
        href = (link.attributes.get("href") or link.attributes.get("content")) if link else None
        image = _fetch_image(urljoin(base, href), "logo", fetcher) if href else None
        if image is not None:
            return image
    return None


def find_hero_images(
    html: LexborHTMLParser, base: str, fetcher: Fetcher, logo: BrandImage | None
) -> list[BrandImage]:
    """The hero image (with its alt text and the hero's text around it) and the social image
    (og:image or twitter:image, with its alt and the page's title), each fetched once."""
    images: list[BrandImage] = []
    hero = html.css_first("[class*=hero] img, header img:not([class*=logo]), main img")
    social = _meta(html, 'meta[property="og:image"]', 'meta[name="twitter:image"]')
    wanted: list[tuple[str, str, str, str]] = []
    if hero is not None and hero.attributes.get("src") and not _is_logo(hero):
        context = _text(hero.parent)[:SURROUNDING_CHARS] if hero.parent is not None else ""
        wanted.append(
            ("hero", hero.attributes.get("src") or "", hero.attributes.get("alt") or "", context)
        )
    if social:
        social_alt = _meta(html, 'meta[property="og:image:alt"]', 'meta[name="twitter:image:alt"]')
        title = _meta(html, 'meta[property="og:title"]', 'meta[name="description"]') or ""
        wanted.append(("social", social, social_alt or "", title[:SURROUNDING_CHARS]))
    seen = {logo.url} if logo is not None else set()
    for role, src, alt, context in wanted:
        url = urljoin(base, src)
        if url in seen:
            continue
        seen.add(url)
        image = _fetch_image(url, role, fetcher, alt, context)
        if image is not None:
            images.append(image)
    return images


def _copy(
    html: LexborHTMLParser, name: str, tagline: str | None, description: str | None
) -> list[str]:
    texts = [name, tagline or "", description or ""]
    texts += [_text(node) for node in html.css("h1, h2, h3, p, li, button")[:60]]
    return [text for text in dict.fromkeys(texts) if len(text) > 2]


def _rgb(item: dict[str, Any]) -> Rgb:
    value = int(item["hex"][1:], 16)
    return Rgb(value >> 16, (value >> 8) & 255, value & 255)


def _aesthetic(colours: list[dict[str, Any]], fonts: list[dict[str, Any]], tone: list[str]) -> str:
    solids = {item["role"]: item for item in colours if item["type"] == "solid"}
    parts: list[str] = []
    background = solids.get("background")
    primary = solids.get("primary") or solids.get("accent")
    if background or primary:
        mood = ""
        if background:
            mood = "dark" if oklab(_rgb(background))[0] < 0.5 else "light"
        if primary and chroma(_rgb(primary)) >= 0.04:
            _, a, b = oklab(_rgb(primary))
            warmth = "warm" if math.degrees(math.atan2(b, a)) % 360 < 120 else "cool"
            mood = f"{mood}, {warmth}" if mood else warmth
        led = f" led by {primary['name'].lower()}" if primary else ""
        on = f" on {background['name'].lower()}" if background else ""
        parts.append(f"A {mood} palette{led}{on}" if mood else f"A palette{led}{on}")
    if any(item["type"] == "gradient" for item in colours):
        parts.append("with gradient accents")
    by_role = {item["role"]: item["fontFamily"] for item in fonts}
    if by_role:
        type_parts = [
            f"{family} headings" if role == "heading" else f"{family} body text"
            for role, family in by_role.items()
        ]
        parts.append("set in " + " and ".join(type_parts))
    sentence = ", ".join(parts) if parts else "A plain site with little visual styling"
    if tone:
        sentence += "; the voice is " + ", ".join(tone[:3])
    return sentence + "."


def extract_style(url: str, fetcher: Fetcher) -> Extraction:
    """Extract a brand style from the website at `url`, fetched only through `fetcher`.

    Raises `SiteUnavailable` when the page itself cannot be fetched; anything else missing just
    leaves its field empty. The style has every StyleDetail field (a fresh `id`, `logoUrl` the
    logo's source URL for the caller to replace once re-hosted) and is checked against the
    schema before it is returned."""
    site = load_site(url, fetcher)
    html = site.html
    rules, font_faces = parse_rules(site.stylesheets)
    variables = custom_properties(rules)
    palette = PaletteBuilder()
    gradients = _collect_colours(rules, html, variables, palette)
    logo = find_logo(html, site.url, fetcher)
    images = find_hero_images(html, site.url, fetcher, logo)
    if logo is not None:
        for colour in image_colours(logo.body, logo.content_type):
            palette.add(colour, 4.0, "logo")
    for image in images:
        for colour in image_colours(image.body, image.content_type):
            palette.add(colour, 2.0, "image")
    colours = palette.solids() + _gradient_items(gradients)
    fonts = typography(html, rules, variables, font_faces)
    name = site_name(html, site.url)
    description = _meta(html, 'meta[name="description"]', 'meta[property="og:description"]')
    tagline = _tagline(html, name)
    tone = detect_tone(_copy(html, name, tagline, description))
    style: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "name": name,
        "url": site.url,
        "description": description[:1000] if description else None,
        "tagline": tagline,
        "colours": colours,
        "typography": fonts,
        "tone": tone,
        "aesthetic": _aesthetic(colours, fonts, tone),
        "logoUrl": logo.url if logo is not None else None,
    }
    validate_style(style)
    if logo is not None and not logo.alt_text:
        logo = replace(logo, alt_text=f"{name} logo")
    return Extraction(style=style, logo=logo, images=images)
