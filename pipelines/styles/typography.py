"""Heading and body fonts: the computed `font-family` of the page's headings and body text, with
the families the site loads (Google Fonts links, `@font-face`) preferred over system stacks."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import tinycss2
from selectolax.lexbor import LexborHTMLParser, LexborNode

from pipelines.styles.css import Rule, declarations, resolve_vars, selector_matches

GENERIC_FAMILIES = {
    "serif",
    "sans-serif",
    "monospace",
    "cursive",
    "fantasy",
    "system-ui",
    "ui-sans-serif",
    "ui-serif",
    "ui-monospace",
    "ui-rounded",
    "emoji",
    "math",
    "-apple-system",
    "blinkmacsystemfont",
    "segoe ui",
    "inherit",
    "initial",
    "unset",
}
INHERITED = ("font-family", "font-weight", "text-transform")


def google_font_families(html: LexborHTMLParser) -> list[str]:
    families: list[str] = []
    for link in html.css("link[href]"):
        href = link.attributes.get("href") or ""
        if "fonts.googleapis.com" not in href:
            continue
        for value in parse_qs(urlsplit(href).query).get("family", []):
            for family in value.split("|"):
                families.append(family.split(":")[0].replace("+", " ").strip())
    return [family for family in families if family]


def font_face_families(font_faces: list[dict[str, str]]) -> list[str]:
    return [
        face["font-family"].strip().strip("'\"") for face in font_faces if "font-family" in face
    ]


def _families(value: str) -> list[str]:
    return [part.strip().strip("'\"") for part in value.split(",") if part.strip()]


def pick_family(value: str, loaded: list[str]) -> str | None:
    """The family the page means: a loaded web font if listed, else the first real family,
    else the generic one (kept only when nothing real is named)."""
    families = _families(value)
    loaded_lower = {family.lower() for family in loaded}
    for family in families:
        if family.lower() in loaded_lower:
            return family
    real = [f for f in families if f.lower() not in GENERIC_FAMILIES and not f.startswith("var(")]
    if real:
        return real[0]
    # Only generics: the last is the stack's final, widest fallback ("sans-serif").
    return families[-1] if families else None


_FONT_SIZE = (
    r"(?:\d[\d.]*(?:px|r?em|%|pt|vw|vh|vmin|vmax|ch|ex)"
    r"|(?:xx?-)?(?:small|medium|large)|larger|smaller)(?:/\S+)?"
)
_FONT_SHORTHAND = re.compile(rf"^(.*?)(?:^|\s){_FONT_SIZE}\s+(.+)$")


def _font_shorthand(value: str) -> dict[str, str]:
    """`font: 700 2rem/1.2 "Inter", sans-serif` -> weight and family."""
    found = _FONT_SHORTHAND.match(value.strip())
    if not found:
        return {}
    result = {"font-family": found.group(2)}
    weight = re.search(r"\b(bold|bolder|lighter|[1-9]00)\b", found.group(1))
    if weight:
        result["font-weight"] = weight.group(1)
    return result


def computed(node: LexborNode, rules: list[Rule], variables: dict[str, str]) -> dict[str, str]:
    """The inherited font properties of a node: ancestors first, then matching rules in
    specificity-then-source order, then its own `style=` attribute."""
    chain: list[LexborNode] = []
    current: LexborNode | None = node
    while current is not None and current.tag not in ("-undef", "#document", None):
        chain.append(current)
        current = current.parent
    values: dict[str, str] = {}
    for element in reversed(chain):
        matched = [rule for rule in rules if selector_matches(rule.selector, element)]
        matched.sort(key=lambda rule: (_specificity(rule.selector), rule.order))
        layers = [rule.declarations for rule in matched]
        layers.append(declarations_of_attribute(element))
        for decls in layers:
            if "font" in decls:
                values.update(_font_shorthand(resolve_vars(decls["font"], variables)))
            for name in INHERITED:
                if name in decls:
                    values[name] = resolve_vars(decls[name], variables)
    return values


def declarations_of_attribute(node: LexborNode) -> dict[str, str]:
    style = node.attributes.get("style") or ""
    return declarations(tinycss2.parse_component_value_list(style)) if style else {}


def _specificity(selector: str) -> tuple[int, int, int]:
    return (
        selector.count("#"),
        selector.count(".") + selector.count("[") + selector.count(":"),
        len(re.findall(r"(?:^|[\s>+~])[a-zA-Z]", selector)),
    )


def weight_name(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip().lower()
    if value in ("bold", "bolder"):
        return "bold"
    if value == "normal":
        return "regular"
    if value == "lighter":
        return "thin"
    if value.isdigit():
        number = int(value)
        return "thin" if number <= 300 else "bold" if number >= 600 else "regular"
    return None


def transform_name(value: str | None) -> str | None:
    value = (value or "").strip().lower()
    return value if value in ("uppercase", "lowercase", "none") else None


# What browsers render when the site sets no weight.
DEFAULT_WEIGHTS = {"heading": "bold", "body": "regular"}


def typography(
    html: LexborHTMLParser,
    rules: list[Rule],
    variables: dict[str, str],
    font_faces: list[dict[str, str]],
) -> list[dict[str, str | None]]:
    loaded = google_font_families(html) + font_face_families(font_faces)
    # Only rules that set a font property matter here; sites ship thousands of others.
    font_rules = [
        rule for rule in rules if any(name in rule.declarations for name in ("font", *INHERITED))
    ]
    items: list[dict[str, str | None]] = []
    heading = next(iter(html.css("h1, h2, h3, [role=heading]")), None)
    body = next(iter(html.css("main p, p, body")), None)
    for role, node in (("heading", heading), ("body", body)):
        values = computed(node, font_rules, variables) if node is not None else {}
        family = pick_family(values.get("font-family", ""), loaded)
        if family is None and loaded:
            # A loaded font the cascade did not reveal: headings take the first, body the last.
            family = loaded[0] if role == "heading" else loaded[-1]
        if family is None:
            continue
        weight = weight_name(values.get("font-weight")) or DEFAULT_WEIGHTS[role]
        items.append(
            {
                "fontFamily": family[:100],
                "weight": weight,
                "textTransform": transform_name(values.get("text-transform")),
                "role": role,
            }
        )
    return items
