"""What an engine (the rendered path or the text-only one) read from a page, before it becomes a
style: both fill the same reading, and `extract.style_from_reading` builds every style."""

from __future__ import annotations

from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

from pipelines.styles.colours import Gradient, Rgb
from pipelines.styles.images import BrandImage
from pipelines.styles.palette import PaletteBuilder


@dataclass
class PageReading:
    url: str  # the final URL, after redirects
    # The document: the server's HTML, or the browser's DOM after the page's scripts ran.
    html: LexborHTMLParser
    palette: PaletteBuilder
    gradients: list[Gradient]
    # Computed `font-family`, `font-weight` and `text-transform` of "heading" and "body".
    fonts_by_role: dict[str, dict[str, str]]
    # Families the page loads or declares (Google Fonts, `@font-face`, `document.fonts`).
    loaded_fonts: list[str]
    # The colour that covers most of what a visitor sees; None: the heaviest background.
    page_background: Rgb | None
    logo: BrandImage | None
    images: list[BrandImage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
