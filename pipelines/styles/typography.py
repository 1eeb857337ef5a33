"""Heading and body fonts: the computed `font-family` of the page's headings and body text (from
the browser, or from the text-only path's cascade), with the families the site loads (Google
Fonts links, `@font-face`, the Font Loading API) preferred over system stacks."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from selectolax.lexbor import LexborHTMLParser

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
    fonts_by_role: dict[str, dict[str, str]], loaded: list[str]
) -> list[dict[str, str | None]]:
    """The style's typography items from the computed font properties (`font-family`,
    `font-weight`, `text-transform`) of the heading and of the body text."""
    items: list[dict[str, str | None]] = []
    for role in ("heading", "body"):
        values = fonts_by_role.get(role, {})
        family = pick_family(values.get("font-family", ""), loaded)
        if family is None and loaded:
            # A loaded font the page did not reveal: headings take the first, body the last.
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
