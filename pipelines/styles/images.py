"""Brand images (logo, hero, social image): what the extraction hands back is always a raster image
that the caller's check accepted, never the site's bytes as they came.

A site's image may be anything under an image content type (HTML served as `image/x-custom`, an
SVG with `onload`); re-hosted from our origin it would run as our page. So every image goes
through the caller's `ImageCheck` (the service passes `core.images.inspect_image`: PNG, JPEG, GIF
or WebP that decodes) and SVG is rasterised to PNG first: by the browser on the rendered path,
by CairoSVG here on the text-only path (scripts never run, external references are never
fetched); where CairoSVG cannot load its Cairo library, SVG logos are dropped and the next
candidate is used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import ModuleType

from pipelines.styles.sources import Fetcher, try_fetch

log = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 5 * 1024 * 1024
# The width of a rasterised SVG logo, in pixels (its height follows its shape).
SVG_RASTER_WIDTH = 512

ImageCheck = Callable[[bytes], str | None]
"""The caller's check of image bytes: the content type of an accepted raster image, else None."""


@dataclass(frozen=True)
class BrandImage:
    """An image the caller re-hosts into the style's folder; `url` is None for an inline SVG.
    `body` is raster bytes that the extraction's `ImageCheck` accepted as `content_type`."""

    role: str
    url: str | None
    content_type: str
    body: bytes
    alt_text: str = ""
    surrounding_text: str = ""


def is_svg(content_type: str | None, body: bytes) -> bool:
    head = body.lstrip()[:256].lower()
    return "svg" in (content_type or "") or head.startswith(b"<svg") or b"<svg" in head


def accepted(
    role: str,
    url: str | None,
    body: bytes,
    check: ImageCheck,
    alt: str = "",
    context: str = "",
) -> BrandImage | None:
    """The brand image, if `check` accepts its (raster) bytes; its type is what they really are."""
    if not body or len(body) > MAX_IMAGE_BYTES:
        return None
    content_type = check(body)
    if content_type is None:
        log.info("the %s image %s is not an accepted image; skipped", role, url or "(inline)")
        return None
    return BrandImage(role, url, content_type, body, alt, context)


@cache
def _cairosvg() -> ModuleType | None:
    try:
        import cairosvg
    except OSError as error:  # the Python package is there, Cairo's shared library is not
        log.warning("SVG logos are skipped on the text-only path: %s", error)
        return None
    return cairosvg


def rasterise_svg(body: bytes) -> bytes | None:
    """PNG of an SVG (SVG_RASTER_WIDTH wide), or None if it cannot be drawn here. CairoSVG's safe
    mode fetches nothing but `data:` URLs and refuses XML entities."""
    cairosvg = _cairosvg()
    if cairosvg is None:
        return None
    try:
        png: bytes = cairosvg.svg2png(bytestring=body, output_width=SVG_RASTER_WIDTH)
    except Exception as error:  # CairoSVG raises many types on bad markup
        log.info("an SVG logo could not be rasterised: %s", error)
        return None
    return png


def fetch_image(
    url: str, role: str, fetcher: Fetcher, check: ImageCheck, alt: str = "", context: str = ""
) -> BrandImage | None:
    """A brand image fetched for the text-only path: SVG rasterised, everything checked."""
    if url.startswith("data:"):
        return None
    document = try_fetch(url, fetcher)
    if document is None or not document.body or len(document.body) > MAX_IMAGE_BYTES:
        return None
    body = document.body
    if is_svg(document.content_type, body):
        raster = rasterise_svg(body)
        if raster is None:
            return None
        body = raster
    return accepted(role, document.url, body, check, alt, context)
