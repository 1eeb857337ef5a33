"""The text-only path: the page's HTML and stylesheets read as text, through the small cascade of
`css.py`. The fallback where no browser is installed; same output as the rendered path."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode

from pipelines.styles.colours import CANVAS, Gradient, Rgb, colours_in, gradients_in
from pipelines.styles.css import (
    INHERITED_FONT_PROPERTIES,
    ROOT_SELECTORS,
    Rule,
    computed,
    custom_properties,
    declarations_of_attribute,
    declared,
    parse_rules,
    resolve_vars,
    selector_matches,
)
from pipelines.styles.document import meta_content, node_text
from pipelines.styles.images import (
    BrandImage,
    ImageCheck,
    accepted,
    fetch_image,
    rasterise_svg,
)
from pipelines.styles.palette import BASE_WEIGHT, BUTTONISH, PaletteBuilder, role_hint
from pipelines.styles.reading import PageReading
from pipelines.styles.sources import Fetcher, load_site
from pipelines.styles.typography import font_face_families, google_font_families

MAX_ELEMENTS = 3000
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
_VAR_NAME = re.compile(r"var\(\s*(--[\w-]+)")


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


def find_logo(
    html: LexborHTMLParser, base: str, fetcher: Fetcher, check: ImageCheck
) -> BrandImage | None:
    """A logo-like `<img>`/`<svg>` (header first), else apple-touch-icon, else og:image; the
    first that gives an accepted image (an inline SVG rasterised)."""
    header_nodes = html.css("header img, header svg, nav img, nav svg")
    candidates = [n for n in header_nodes if _is_logo(n)]
    candidates += [n for n in html.css("img, svg") if _is_logo(n) and n not in candidates]
    for node in candidates[:MAX_LOGO_CANDIDATES]:
        alt = node.attributes.get("alt") or node.attributes.get("aria-label") or ""
        if node.tag == "svg":
            raster = rasterise_svg((node.html or "").encode())
            image = accepted("logo", None, raster, check, alt) if raster else None
        else:
            src = node.attributes.get("src")
            image = fetch_image(urljoin(base, src), "logo", fetcher, check, alt) if src else None
        if image is not None:
            return image
    for selector in ('link[rel~="apple-touch-icon"]', 'meta[property="og:image"]'):
        link = html.css_first(selector)
        href = (link.attributes.get("href") or link.attributes.get("content")) if link else None
        image = fetch_image(urljoin(base, href), "logo", fetcher, check) if href else None
        if image is not None:
            return image
    return None


def find_hero_images(
    html: LexborHTMLParser,
    base: str,
    fetcher: Fetcher,
    check: ImageCheck,
    logo: BrandImage | None,
) -> list[BrandImage]:
    """The hero image (with its alt text and the hero's text around it) and the social image
    (og:image or twitter:image, with its alt and the page's title), each fetched once."""
    images: list[BrandImage] = []
    hero = html.css_first("[class*=hero] img, header img:not([class*=logo]), main img")
    social = meta_content(html, 'meta[property="og:image"]', 'meta[name="twitter:image"]')
    wanted: list[tuple[str, str, str, str]] = []
    if hero is not None and hero.attributes.get("src") and not _is_logo(hero):
        context = node_text(hero.parent)[:SURROUNDING_CHARS] if hero.parent is not None else ""
        wanted.append(
            ("hero", hero.attributes.get("src") or "", hero.attributes.get("alt") or "", context)
        )
    if social:
        social_alt = meta_content(
            html, 'meta[property="og:image:alt"]', 'meta[name="twitter:image:alt"]'
        )
        title = meta_content(html, 'meta[property="og:title"]', 'meta[name="description"]') or ""
        wanted.append(("social", social, social_alt or "", title[:SURROUNDING_CHARS]))
    seen = {logo.url} if logo is not None else set()
    for role, src, alt, context in wanted:
        url = urljoin(base, src)
        if url in seen:
            continue
        seen.add(url)
        image = fetch_image(url, role, fetcher, check, alt, context)
        if image is not None:
            images.append(image)
    return images


def _page_background(html: LexborHTMLParser, rules: list[Rule], variables: dict[str, str]) -> Rgb:
    """The body's background (else the root's), as the cascade declares it; where neither paints
    one, the canvas's white shows, whatever colour a header or footer declares."""
    for selector in ("body", "html"):
        node = html.css_first(selector)
        if node is None:
            continue
        for name in ("background-color", "background"):
            colours = colours_in(declared(node, rules, name, variables))
            if colours:
                return colours[-1]
    return CANVAS


def read_text(url: str, fetcher: Fetcher, check: ImageCheck) -> PageReading:
    """Read the page at `url` and its stylesheets as text. Raises `SiteUnavailable`."""
    site = load_site(url, fetcher)
    html = site.html
    rules, font_faces = parse_rules(site.stylesheets)
    variables = custom_properties(rules)
    palette = PaletteBuilder()
    gradients = _collect_colours(rules, html, variables, palette)
    logo = find_logo(html, site.url, fetcher, check)
    # Only rules that set a font property matter here; sites ship thousands of others.
    font_rules = [
        rule
        for rule in rules
        if any(name in rule.declarations for name in ("font", *INHERITED_FONT_PROPERTIES))
    ]
    fonts_by_role = {}
    for role, selector in (("heading", "h1, h2, h3, [role=heading]"), ("body", "main p, p, body")):
        node = html.css_first(selector)
        fonts_by_role[role] = computed(node, font_rules, variables) if node is not None else {}
    return PageReading(
        url=site.url,
        html=html,
        palette=palette,
        gradients=gradients,
        fonts_by_role=fonts_by_role,
        loaded_fonts=google_font_families(html) + font_face_families(font_faces),
        page_background=_page_background(html, rules, variables),
        logo=logo,
        images=find_hero_images(html, site.url, fetcher, check, logo),
    )
