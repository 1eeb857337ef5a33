"""Brand style extraction from a website, and the embedding blocks of style asset search.

Pure library: documents come in through a `Fetcher`, plain dicts go out. No HTTP server,
queue or database here; the worker wires those."""

from pipelines.styles.embeddings import (
    AssetFacts,
    describe_asset,
    describe_image,
    embed_texts,
    rank_by_similarity,
)
from pipelines.styles.extract import BrandImage, Extraction, extract_style
from pipelines.styles.palette import image_colours, image_shape
from pipelines.styles.schema import STYLE_DETAIL_SCHEMA, InvalidStyle, validate_style
from pipelines.styles.sources import FetchedDocument, Fetcher, SiteUnavailable
from pipelines.styles.tone import detect_tone

__all__ = [
    "STYLE_DETAIL_SCHEMA",
    "AssetFacts",
    "BrandImage",
    "Extraction",
    "FetchedDocument",
    "Fetcher",
    "InvalidStyle",
    "SiteUnavailable",
    "describe_asset",
    "describe_image",
    "detect_tone",
    "embed_texts",
    "extract_style",
    "image_colours",
    "image_shape",
    "rank_by_similarity",
    "validate_style",
]
