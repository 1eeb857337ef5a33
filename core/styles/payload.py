"""A brand style's payload (SPEC.md "Style"): its colours (solids and gradients), typography and
the rest, declared once. Extraction's output is checked against it where the worker takes it
(`validate_style`), the style row stores it as JSON, the styles service reads it typed, and the
API shows it (these are the OpenAPI document's StyleDetail, SolidColour, GradientColour,
GradientStop and TypographyItem). Python names are snake_case; the JSON's are camelCase."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

Hex = Annotated[str, StringConstraints(pattern=r"^#[0-9A-Fa-f]{6}$")]
ColourName = Annotated[str, StringConstraints(min_length=1, max_length=50)]
Role = Annotated[str, StringConstraints(max_length=200)]


class PayloadModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # The titles the document always had, made of the JSON's names ("Logourl").
        field_title_generator=lambda name, _info: to_camel(name).title(),
    )


class SolidColour(PayloadModel):
    type: Literal["solid"]
    name: ColourName
    hex: Hex
    role: Role = ""


class GradientStop(PayloadModel):
    hex: Hex
    position_pct: Annotated[float, Field(ge=0, le=100)] | None = None


class GradientColour(PayloadModel):
    type: Literal["gradient"]
    name: ColourName
    gradient_subtype: Literal["linear", "radial"]
    stops: Annotated[list[GradientStop], Field(min_length=2, max_length=6)]
    angle_deg: float | None = None
    role: Role = ""


Colour = Annotated[SolidColour | GradientColour, Field(discriminator="type")]


class TypographyItem(PayloadModel):
    font_family: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    weight: Literal["thin", "regular", "bold"] | None = None
    text_transform: Literal["uppercase", "lowercase", "none"] | None = None
    role: Literal["heading", "body"]


class StyleDetail(PayloadModel):
    id: str
    name: str
    url: str | None
    description: str | None
    tagline: str | None
    colours: list[Colour]
    typography: list[TypographyItem]
    tone: list[str]
    aesthetic: str
    logo_url: str | None


_COLOURS = TypeAdapter(list[Colour])
_TYPOGRAPHY = TypeAdapter(list[TypographyItem])


def colours_of(stored: list[dict[str, Any]]) -> list[SolidColour | GradientColour]:
    """A style row's colours, typed."""
    return _COLOURS.validate_python(stored)


def typography_of(stored: list[dict[str, Any]]) -> list[TypographyItem]:
    """A style row's typography, typed."""
    return _TYPOGRAPHY.validate_python(stored)


def stored(items: list[SolidColour | GradientColour] | list[TypographyItem]) -> list[Any]:
    """Colours or typography as a style row keeps them (the JSON's own names)."""
    return [item.model_dump(mode="json", exclude_unset=True) for item in items]


class InvalidStyle(Exception):
    """An extraction built a style that breaks the schema: a bug there, never the site's fault."""


def validate_style(style: dict[str, Any]) -> StyleDetail:
    """An extraction's style, typed; raises InvalidStyle naming the first field that breaks the
    schema (`colours/0/...`)."""
    try:
        return StyleDetail.model_validate(style, by_alias=True, by_name=False)
    except ValidationError as error:
        first = error.errors()[0]
        where = "/".join(str(part) for part in first["loc"]) or "(root)"
        raise InvalidStyle(f"style breaks the schema at {where}: {first['msg']}") from None
