"""Styles (SPEC.md "Style", "Style summary", "Style search hit")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from core.jobs.contract import ImageReference, PageUrl
from gateway.contract import RequestModel, ResponseModel

Hex = Annotated[str, StringConstraints(pattern=r"^#[0-9A-Fa-f]{6}$")]
ColourName = Annotated[str, StringConstraints(min_length=1, max_length=50)]
Role = Annotated[str, StringConstraints(max_length=200)]


class ExtractRequest(RequestModel):
    url: PageUrl


class SolidColour(ResponseModel):
    type: Literal["solid"]
    name: ColourName
    hex: Hex
    role: Role = ""


class GradientStop(ResponseModel):
    hex: Hex
    positionPct: Annotated[float, Field(ge=0, le=100)] | None = None


class GradientColour(ResponseModel):
    type: Literal["gradient"]
    name: ColourName
    gradientSubtype: Literal["linear", "radial"]
    stops: Annotated[list[GradientStop], Field(min_length=2, max_length=6)]
    angleDeg: float | None = None
    role: Role = ""


class TypographyItem(ResponseModel):
    fontFamily: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    weight: Literal["thin", "regular", "bold"] | None = None
    textTransform: Literal["uppercase", "lowercase", "none"] | None = None
    role: Literal["heading", "body"]


class StyleDetail(ResponseModel):
    id: str
    name: str
    url: str | None
    description: str | None
    tagline: str | None
    colours: list[Annotated[SolidColour | GradientColour, Field(discriminator="type")]]
    typography: list[TypographyItem]
    tone: list[str]
    aesthetic: str
    logoUrl: str | None


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
