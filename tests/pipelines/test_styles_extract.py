"""Brand style extraction (pipelines/styles) against local fixture sites served on loopback, each
site read by both engines (the `engine` fixture): rendered in headless Chromium and as text (the
fallback). The sites, their server and the fetcher are in tests/support/styles.py."""

from __future__ import annotations

import time

import pytest

from gateway.styles.schemas import StyleDetail
from pipelines.styles import Browser, Extraction, Fetcher, SiteUnavailable, extract_style
from tests.support.styles import colours_by_role, fonts_by_role, image_type, is_png


def _extract(base_url: str, fetcher: Fetcher, path: str, engine: Browser | None) -> Extraction:
    started = time.perf_counter()
    extraction = extract_style(base_url + path, fetcher, image_type, engine)
    elapsed = time.perf_counter() - started
    print(f"{path} ({extraction.engine}): {elapsed * 1000:.0f} ms")
    assert extraction.engine == ("text" if engine is None else "rendered")
    StyleDetail.model_validate(extraction.style)
    return extraction


def test_css_variables_google_fonts_and_inline_svg_logo(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    extraction = _extract(base_url, fetcher, "/northwind/", engine)
    style = extraction.style
    assert style["name"] == "Northwind Coffee"
    assert style["tagline"] == "Coffee worth waking up for"
    assert style["description"].startswith("Single-origin beans")
    roles = colours_by_role(extraction)
    assert roles["primary"] == "#6B3E26"  # --color-brand, through var() on buttons and links
    assert roles["background"] == "#FFF8F0"
    assert roles["text"] == "#2B2B2B"
    assert "#E8B04B" in {c.get("hex") for c in style["colours"]}  # the logo's second colour
    fonts = fonts_by_role(extraction)
    assert fonts["heading"]["fontFamily"] == "Playfair Display"
    assert fonts["heading"]["weight"] == "bold"
    assert fonts["body"]["fontFamily"] == "Inter"
    assert extraction.logo is not None and extraction.logo.url is None
    # The inline SVG logo, rasterised (issue 22: never its markup, which could carry script).
    assert extraction.logo.content_type == "image/png" and is_png(extraction.logo.body)
    assert style["logoUrl"] is None
    hero, social = extraction.images
    assert (hero.role, hero.url) == ("hero", base_url + "/northwind/beans.png")
    assert hero.alt_text == "Freshly roasted beans on a linen cloth"
    assert hero.surrounding_text.startswith("Coffee worth waking up for Hand-roasted")
    assert (social.role, social.url) == ("social", base_url + "/northwind/social.png")
    assert social.alt_text == "A cup of dark roast coffee seen from above"
    assert extraction.logo.alt_text == "Northwind logo"
    assert extraction.brand_images == [extraction.logo, hero, social]
    assert 3 <= len(style["tone"]) <= 6


def test_utility_classes_weigh_what_the_page_uses(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    extraction = _extract(base_url, fetcher, "/utility/", engine)
    style = extraction.style
    assert style["name"] == "Launchpad"
    roles = colours_by_role(extraction)
    assert roles["primary"] == "#4F46E5"  # the button's bg-indigo-600, written rgb(79 70 229)
    assert roles["background"] == "#FFFFFF"
    assert roles["text"] == "#0F172A"
    hexes = [c["hex"] for c in style["colours"] if c["type"] == "solid"]
    # Utilities no element uses rank below every colour the page shows (the browser never shows
    # them at all).
    if engine is None:
        assert hexes.index("#F43F5E") > hexes.index("#475569")
    else:
        assert "#F43F5E" not in hexes and "#475569" in hexes
    fonts = fonts_by_role(extraction)
    assert fonts["heading"] == {
        "fontFamily": "Cal Sans",
        "weight": "bold",
        "textTransform": None,
        "role": "heading",
    }
    assert fonts["body"]["fontFamily"] == "sans-serif"  # a system stack: only the generic
    assert style["logoUrl"] == base_url + "/utility/img/launchpad-logo.png"
    assert extraction.logo is not None and extraction.logo.content_type == "image/png"
    assert "technical" in style["tone"]


def test_inline_styles_named_colours_and_no_logo(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    extraction = _extract(base_url, fetcher, "/inline/", engine)
    style = extraction.style
    assert style["name"] == "Meadow & Moss"
    assert style["description"].startswith("Houseplants")  # og:description
    roles = colours_by_role(extraction)
    assert roles["background"] == "#F4F7F1"  # rgb()
    assert roles["text"] == "#1F2E26"  # hsl()
    assert roles["primary"] == "#2E8B57"  # seagreen, the link button's background
    fonts = fonts_by_role(extraction)
    assert fonts["heading"]["fontFamily"] == "Fraunces"
    assert fonts["heading"]["weight"] == "thin"
    assert fonts["heading"]["textTransform"] == "lowercase"
    assert fonts["body"]["fontFamily"] == "Nunito"
    assert extraction.logo is None and style["logoUrl"] is None
    assert "sustainable" in style["tone"]


def test_gradients_imports_and_font_face(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    extraction = _extract(base_url, fetcher, "/aurora/", engine)
    style = extraction.style
    assert style["name"] == "Aurora Studio"
    assert style["tagline"] == "Design that glows"  # og:title, as the h1 repeats the name
    gradients = [c for c in style["colours"] if c["type"] == "gradient"]
    assert gradients[0]["gradientSubtype"] == "linear"
    assert gradients[0]["angleDeg"] == 135
    assert gradients[0]["stops"] == [
        {"hex": "#FF7A18", "positionPct": 0},
        {"hex": "#AF002D", "positionPct": 50},
        {"hex": "#319197", "positionPct": 100},
    ]
    radial = next(g for g in gradients if g["gradientSubtype"] == "radial")
    assert [stop["hex"] for stop in radial["stops"]] == ["#1E1B4B", "#0B0A1F"]
    assert any(g["angleDeg"] == 90 for g in gradients)  # "to right"
    roles = colours_by_role(extraction)
    assert roles["background"] == "#0B0A1F"  # from @import-ed base.css
    assert roles["text"] == "#F5F3FF"
    fonts = fonts_by_role(extraction)
    assert fonts["heading"]["fontFamily"] == "Aurora Grotesk"
    assert fonts["heading"]["textTransform"] == "uppercase"
    assert fonts["body"]["fontFamily"] == "DM Sans"
    assert style["logoUrl"] == base_url + "/aurora/social.png"  # og:image fallback
    assert "dark" in style["aesthetic"] and "gradient" in style["aesthetic"]


def test_google_fonts_font_shorthand_and_touch_icon(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    extraction = _extract(base_url, fetcher, "/grotesk/", engine)
    style = extraction.style
    assert style["name"] == "Peakline"  # application-name
    roles = colours_by_role(extraction)
    assert roles["primary"] == "#FCA311"
    assert roles["background"] == "#F2F5F7"
    assert roles["text"] == "#14213D"
    fonts = fonts_by_role(extraction)
    assert fonts["heading"] == {
        "fontFamily": "Space Grotesk",
        "weight": "bold",
        "textTransform": "uppercase",
        "role": "heading",
    }
    assert fonts["body"]["fontFamily"] == "Work Sans"
    assert fonts["body"]["weight"] == "thin"
    assert style["logoUrl"] == base_url + "/grotesk/apple-touch-icon.png"
    assert extraction.images == [], "the og:image answers 404: skipped, not fatal"
    assert "adventurous" in style["tone"]


def test_redirect_resolves_against_the_final_url(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    extraction = _extract(base_url, fetcher, "/moved/", engine)
    style = extraction.style
    assert style["url"] == base_url + "/relocated/"
    assert style["name"] == "Harbor Bank"
    assert style["tagline"] == "Banking that keeps your business safe"
    roles = colours_by_role(extraction)
    assert roles["primary"] == "#0B6E4F"
    assert roles["text"] == "#1B2A41"
    assert "#F4D35E" in {c.get("hex") for c in style["colours"]}  # from the SVG logo
    fonts = fonts_by_role(extraction)
    assert fonts["heading"]["fontFamily"] == "Merriweather"
    assert fonts["body"]["fontFamily"] == "Source Sans 3"
    assert style["logoUrl"] == base_url + "/relocated/logo.svg"


def test_a_bare_page_still_gives_a_valid_style(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    style = _extract(base_url, fetcher, "/bare/", engine).style
    assert style["colours"] == [] and style["typography"] == []
    assert style["name"] == "127.0.0.1"
    assert style["logoUrl"] is None and style["tagline"] is None


def test_an_unfetchable_site_says_why(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    with pytest.raises(SiteUnavailable, match="could not be fetched"):
        extract_style(base_url + "/missing/", fetcher, image_type, engine)
    with pytest.raises(SiteUnavailable, match="not an HTML page"):
        extract_style(base_url + "/relocated/style.css", fetcher, image_type, engine)


def test_a_light_site_on_the_browsers_own_white_is_called_light(
    base_url: str, fetcher: Fetcher, engine: Browser | None
) -> None:
    """No background on the page itself, only a dark header and footer: the visitor sees the
    canvas's white, and the aesthetic says light (it said dark, from the header's colour)."""
    extraction = _extract(base_url, fetcher, "/daylight/", engine)
    assert extraction.style["aesthetic"].startswith("A light"), extraction.style["aesthetic"]
    assert "#FF6F61" in [colour["hex"] for colour in extraction.style["colours"]]
