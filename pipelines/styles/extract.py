"""Brand style extraction: a website in, a StyleDetail-shaped dict (SPEC.md "Style") out.

The page is rendered in headless Chromium when the caller hands a browser (`browser.Browser`),
else read as text (`text.py`); both engines fill a `PageReading` and the style is built from it
here, so the output is the same either way."""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from pipelines.styles.browser import Browser, BrowserUnavailable, RenderBudget
from pipelines.styles.colours import Gradient, Rgb
from pipelines.styles.document import copy_texts, description, site_name, tagline
from pipelines.styles.images import BrandImage, ImageCheck
from pipelines.styles.palette import chroma, colour_name, image_colours, oklab
from pipelines.styles.reading import PageReading
from pipelines.styles.rendered import read_rendered
from pipelines.styles.sources import Fetcher
from pipelines.styles.text import read_text
from pipelines.styles.tone import detect_tone
from pipelines.styles.typography import typography

log = logging.getLogger(__name__)

MAX_GRADIENTS = 3
# The job's note when the page was read without a browser.
TEXT_ONLY_NOTE = "read from the page's HTML and CSS only: {reason}"


@dataclass
class Extraction:
    style: dict[str, Any]
    logo: BrandImage | None = None
    # The hero and social images, not the logo (see `brand_images`).
    images: list[BrandImage] = field(default_factory=list)
    # Which engine read the page ("rendered" or "text"), and what the caller should know.
    engine: str = "rendered"
    notes: list[str] = field(default_factory=list)

    @property
    def brand_images(self) -> list[BrandImage]:
        """What seeds the style's linked folder: the logo first, then hero and social."""
        return ([self.logo] if self.logo is not None else []) + self.images


def extract_style(
    url: str,
    fetcher: Fetcher,
    check: ImageCheck,
    browser: Browser | None = None,
    budget: RenderBudget | None = None,
) -> Extraction:
    """Extract a brand style from the website at `url`, fetched only through `fetcher`.

    With a `browser` the page is rendered (every request it makes goes through `fetcher`) within
    `budget` (the default `RenderBudget` if none); without one, or when the browser cannot start,
    the page is read as text. Brand images are kept only
    as raster images that `check` accepts. Raises `SiteUnavailable` when the page cannot be
    fetched, or cannot be rendered within the browser's budget; anything else missing just leaves
    its field empty. The style has every StyleDetail field (a fresh `id`, `logoUrl` the logo's
    source URL for the caller to replace once re-hosted) and is checked against the schema."""
    if browser is not None:
        try:
            reading = read_rendered(url, fetcher, check, browser, budget or RenderBudget())
            return style_from_reading(reading, "rendered")
        except BrowserUnavailable as error:
            log.warning("rendering %s is not possible (%s); reading it as text", url, error)
            reading = read_text(url, fetcher, check)
            reading.notes.append(TEXT_ONLY_NOTE.format(reason=error))
            return style_from_reading(reading, "text")
    return style_from_reading(read_text(url, fetcher, check), "text")


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


def _rgb(item: dict[str, Any]) -> Rgb:
    value = int(item["hex"][1:], 16)
    return Rgb(value >> 16, (value >> 8) & 255, value & 255)


def _aesthetic(
    colours: list[dict[str, Any]],
    fonts: list[dict[str, Any]],
    tone: list[str],
    page_background: Rgb | None,
) -> str:
    """A sentence from the page's real background (light or dark), its leading brand colour
    (warm or cool), gradients, typography and tone."""
    solids = {item["role"]: item for item in colours if item["type"] == "solid"}
    parts: list[str] = []
    background = solids.get("background")
    primary = solids.get("primary") or solids.get("accent")
    if page_background is not None or primary:
        mood = ""
        if page_background is not None:
            mood = "dark" if oklab(page_background)[0] < 0.5 else "light"
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


def style_from_reading(reading: PageReading, engine: str) -> Extraction:
    """The style (checked against the schema) from what an engine read."""
    palette = reading.palette
    if reading.logo is not None:
        for colour in image_colours(reading.logo.body, reading.logo.content_type):
            palette.add(colour, 4.0, "logo")
    for image in reading.images:
        for colour in image_colours(image.body, image.content_type):
            palette.add(colour, 2.0, "image")
    colours = palette.solids() + _gradient_items(reading.gradients)
    fonts = typography(reading.fonts_by_role, reading.loaded_fonts)
    html = reading.html
    name = site_name(html, reading.url)
    summary = description(html)
    line = tagline(html, name)
    tone = detect_tone(copy_texts(html, name, line, summary))
    page_background = reading.page_background or palette.heaviest("background")
    style: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "name": name,
        "url": reading.url,
        "description": summary,
        "tagline": line,
        "colours": colours,
        "typography": fonts,
        "tone": tone,
        "aesthetic": _aesthetic(colours, fonts, tone, page_background),
        "logoUrl": reading.logo.url if reading.logo is not None else None,
    }
    logo = reading.logo
    if logo is not None and not logo.alt_text:
        logo = replace(logo, alt_text=f"{name} logo")
    return Extraction(style, logo, reading.images, engine, reading.notes)
