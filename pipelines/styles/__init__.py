"""Brand style extraction from a website, and the embedding blocks of style asset search.

Pure library: documents come in through a `Fetcher`, plain dicts go out; a `Browser` (headless
Chromium) renders pages when the caller has one. No HTTP server, queue or database here; the
worker wires those."""

from pipelines.styles.browser import (
    Browser,
    BrowserCrashed,
    BrowserUnavailable,
    RenderBudget,
    find_chromium,
    shared_browser,
)
from pipelines.styles.embeddings import (
    AssetFacts,
    describe_asset,
    describe_image,
    embed_texts,
    embeddings_loaded,
    load_embeddings,
    rank_by_similarity,
)
from pipelines.styles.extract import Extraction, extract_style
from pipelines.styles.images import BrandImage, ImageCheck
from pipelines.styles.palette import image_colours, image_shape
from pipelines.styles.rendered import RenderFailed
from pipelines.styles.sources import FetchedDocument, Fetcher, SiteUnavailable
from pipelines.styles.tone import detect_tone

__all__ = [
    "AssetFacts",
    "BrandImage",
    "Browser",
    "BrowserCrashed",
    "BrowserUnavailable",
    "Extraction",
    "FetchedDocument",
    "Fetcher",
    "ImageCheck",
    "RenderBudget",
    "RenderFailed",
    "SiteUnavailable",
    "describe_asset",
    "describe_image",
    "detect_tone",
    "embed_texts",
    "embeddings_loaded",
    "extract_style",
    "find_chromium",
    "image_colours",
    "image_shape",
    "load_embeddings",
    "rank_by_similarity",
    "shared_browser",
]
