"""Styles (SPEC.md "Style", "Style summary", "Style search hit")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from core.jobs.contract import ImageReference
from core.jobs.requests import RequestModel
from core.styles.payload import Hex, StyleDetail
from gateway.schemas import ResponseModel


class StyleEnvelope(ResponseModel):
    data: StyleDetail


class StyleSummary(ResponseModel):
    id: str
    name: str
    url: str | None
    logoUrl: str | None
    palette: list[Hex]


class StylePage(ResponseModel):
    data: list[StyleSummary]
    nextCursor: str | None


class SearchRequest(RequestModel):
    query: Annotated[str, StringConstraints(min_length=1, max_length=1000)]
    limit: Annotated[int, Field(ge=1, le=50)] = 10


class SearchHit(ResponseModel):
    id: str
    name: str
    url: str
    similarity: float


class SearchResults(ResponseModel):
    data: list[SearchHit]


class LinkAssetsRequest(RequestModel):
    """Images to link into a style's folder: references as on generate (SPEC.md "Reference
    image"), 1 to 20 of them."""

    images: Annotated[list[ImageReference], Field(min_length=1, max_length=20)]


class StyleAssetItem(ResponseModel):
    """An image in a style's linked folder (extension)."""

    id: str = Field(json_schema_extra={"format": "uuid"})
    name: str
    url: str
    source: Literal["brand", "upload", "generation"]
    altText: str
    createdAt: str = Field(json_schema_extra={"format": "date-time"})


class StyleAssets(ResponseModel):
    data: list[StyleAssetItem]


class StyleAssetPage(ResponseModel):
    data: list[StyleAssetItem]
    nextCursor: str | None
