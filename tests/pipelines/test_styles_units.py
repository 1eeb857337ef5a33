"""Pure pieces of pipelines/styles: colour and gradient parsing, palette merging, the schema
check, the embedding blocks of asset search (its speed over 1,000 assets is measured by `python -m
benchmarks styles`), and the search's per-process folder cache."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from PIL import Image
from selectolax.lexbor import LexborHTMLParser

from core.styles.payload import InvalidStyle, validate_style
from core.styles.search import FolderCache, SearchFolder
from pipelines.styles import (
    AssetFacts,
    describe_asset,
    embed_texts,
    image_colours,
    rank_by_similarity,
)
from pipelines.styles.colours import Rgb, colours_in, gradients_in
from pipelines.styles.css import custom_properties, parse_rules, resolve_vars
from pipelines.styles.document import site_name
from pipelines.styles.palette import PaletteBuilder, colour_name, distance


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("#abc", "#AABBCC"),
        ("rebeccapurple", "#663399"),
        ("rgb(79 70 229)", "#4F46E5"),
        ("rgba(255, 0, 0, 0.8)", "#FF0000"),
        ("hsl(210, 50%, 40%)", "#336699"),
        ("1px solid #E2E8F0", "#E2E8F0"),
    ],
)
def test_colour_syntaxes(value: str, expected: str) -> None:
    assert [c.hex for c in colours_in(value)] == [expected]


def test_faint_and_keyword_colours_are_ignored() -> None:
    assert colours_in("transparent") == []
    assert colours_in("rgba(0, 0, 0, 0.1)") == []
    assert colours_in("currentColor inherit") == []


def test_custom_properties_resolve_with_fallbacks_and_root_wins() -> None:
    rules, _ = parse_rules(
        [
            ".card { --brand: #000000 }",
            ":root { --brand: #112233; --link: var(--brand) }",
            "@media (min-width: 1px) { a { color: var(--link) } }",
        ]
    )
    variables = custom_properties(rules)
    assert resolve_vars("var(--link)", variables) == "#112233"
    assert resolve_vars("var(--missing, #ABCDEF)", variables) == "#ABCDEF"
    assert any(rule.selector == "a" for rule in rules)  # flattened out of @media


def test_gradient_angles_and_stop_limits() -> None:
    (top_left,) = gradients_in("linear-gradient(to top left, red, blue)")
    assert top_left.angle_deg == 315
    (turn,) = gradients_in("linear-gradient(0.25turn, #000 10%, #fff 90%)")
    assert turn.angle_deg == 90
    assert [p for _, p in turn.stops] == [10, 90]
    many = ", ".join(["#111111", "#222222", "#333333", "#444444", "#555555", "#666666", "#777"])
    (capped,) = gradients_in(f"linear-gradient({many})")
    assert len(capped.stops) == 6
    assert gradients_in("linear-gradient(red)") == []  # one stop is no gradient


def test_near_duplicates_merge_in_oklab() -> None:
    palette = PaletteBuilder()
    palette.add(Rgb(0x4F, 0x46, 0xE5), 5, "button")
    palette.add(Rgb(0x50, 0x46, 0xE6), 1, "text")
    palette.add(Rgb(0xFF, 0xFF, 0xFF), 3, "background")
    assert [s.colour.hex for s in palette.swatches] == ["#4F46E5", "#FFFFFF"]
    assert distance(Rgb(0, 0, 0), Rgb(255, 255, 255)) > 0.9


def test_colour_names_are_readable() -> None:
    assert colour_name(Rgb(255, 255, 255)) == "White"
    assert colour_name(Rgb(0, 0, 0)) == "Black"
    assert colour_name(Rgb(0x1E, 0x3A, 0x8A)) == "Deep Blue"
    assert colour_name(Rgb(0xFC, 0xA3, 0x11)) == "Amber"


def test_dominant_colours_of_a_raster_image() -> None:
    image = Image.new("RGBA", (60, 20), (0, 0, 0, 0))
    image.paste((200, 30, 40, 255), (0, 0, 40, 20))
    image.paste((20, 40, 200, 255), (40, 0, 60, 20))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    found = image_colours(buffer.getvalue(), "image/png", count=2)
    assert distance(found[0], Rgb(200, 30, 40)) < 0.02
    assert distance(found[1], Rgb(20, 40, 200)) < 0.02
    assert image_colours(b"not an image", "image/png") == []


def _style(**changes: object) -> dict[str, object]:
    style: dict[str, object] = {
        "id": "7d0c4ad2-1f8e-4b8e-9b7e-0c1d2e3f4a5b",
        "name": "Acme",
        "url": None,
        "description": None,
        "tagline": None,
        "colours": [{"type": "solid", "name": "Red", "hex": "#FF0000", "role": "primary"}],
        "typography": [],
        "tone": [],
        "aesthetic": "",
        "logoUrl": None,
    }
    style.update(changes)
    return style


def test_schema_check_matches_the_spec() -> None:
    validate_style(_style())
    with pytest.raises(InvalidStyle, match="colours/0"):
        validate_style(
            _style(colours=[{"type": "solid", "name": "", "hex": "#FF0000", "role": ""}])
        )
    with pytest.raises(InvalidStyle):
        validate_style(_style(extra=1))
    one_stop = {
        "type": "gradient",
        "name": "G",
        "gradientSubtype": "linear",
        "stops": [{"hex": "#000000"}],
        "role": "",
    }
    with pytest.raises(InvalidStyle):
        validate_style(_style(colours=[one_stop]))


def test_asset_description_names_what_a_search_would() -> None:
    text = describe_asset(
        AssetFacts(
            file_name="hero-mountain_sunrise.jpg",
            alt_text="Climbers at dawn",
            surrounding_text="Climb further, pack lighter",
            dominant_colours=("#FCA311", "#14213D"),
            width=1600,
            height=900,
        )
    )
    assert text == (
        "hero mountain sunrise. Climbers at dawn. Climb further, pack lighter. "
        "landscape image. colours: amber, deep blue"
    )


def test_semantic_search_ranks_1000_assets_by_similarity() -> None:
    subjects = ["mountain trail", "coffee cup", "city skyline", "red sneaker", "beach sunset"]
    texts = [f"{subjects[i % 5]} photo number {i}" for i in range(100)]
    embedded = embed_texts(texts)
    assert embedded.shape == (100, 384) and embedded.dtype == np.float32
    assert np.allclose(np.linalg.norm(embedded, axis=1), 1, atol=1e-4)
    # 1,000 assets: the embedded 100, each with nine jittered neighbours.
    noise = np.random.default_rng(0).normal(0, 0.01, (1000, 384)).astype(np.float32)
    assets = np.repeat(embedded, 10, axis=0) + noise
    assets /= np.linalg.norm(assets, axis=1, keepdims=True)
    query = embed_texts(["a hot espresso"])[0]
    hits = rank_by_similarity(query, assets, 10)
    assert all(texts[index // 10].startswith("coffee cup") for index, _ in hits)
    assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)
    assert rank_by_similarity(query, assets[:0], 10) == []


def test_folder_cache_answers_only_the_current_version_and_forgets_the_oldest() -> None:
    def folder(version: tuple[int, Any]) -> Any:
        return SearchFolder(version, [], [], [], np.zeros((0, 384), np.float32))

    cache = FolderCache(capacity=2)
    cache.put("a", folder((1, "t1")))
    assert cache.get("a", (1, "t1")) is not None
    assert cache.get("a", (2, "t2")) is None, "a folder that grew is read again"
    cache.put("b", folder((1, "t1")))
    cache.get("a", (1, "t1"))
    cache.put("c", folder((1, "t1")))
    assert cache.get("b", (1, "t1")) is None, "the least recently used went"
    assert cache.get("a", (1, "t1")) is not None and cache.get("c", (1, "t1")) is not None


def test_a_single_query_embeds_as_the_batch_path_does() -> None:
    """A query is embedded alone, assets in padded batches: the vectors a search compares must
    come out the same either way."""
    texts = [
        "shoes",
        "a much longer sentence about the mountains at dawn, with a lake and pines",
        " ".join(["word"] * 400),  # past the 256-token limit: truncated the same way
        "Ünïcödé café — ☕",
    ]
    batch = embed_texts(texts)
    one_by_one = np.concatenate([embed_texts([text]) for text in texts])
    assert one_by_one.shape == (4, 384) and one_by_one.dtype == np.float32
    assert np.allclose(batch, one_by_one, atol=1e-5)


@pytest.mark.parametrize(
    "title",
    [
        "Nocturne Audio: headphones for the night shift",
        "Nocturne Audio | headphones for the night shift",
        "Nocturne Audio - headphones for the night shift",
        "Nocturne Audio \u2014 headphones for the night shift",
    ],
)
def test_a_sites_name_drops_the_titles_tagline(title: str) -> None:
    page = LexborHTMLParser(f"<html><head><title>{title}</title></head><body></body></html>")
    assert site_name(page, "https://203.0.113.9/") == "Nocturne Audio"
