"""The StyleDetail schema (SPEC.md "Style") as JSON Schema, so the pipeline can check its output
without importing the gateway."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

HEX = {"type": "string", "pattern": "^#[0-9A-Fa-f]{6}$"}
ROLE = {"type": "string", "maxLength": 200}
NAME = {"type": "string", "minLength": 1, "maxLength": 50}
NULLABLE_STRING = {"type": ["string", "null"]}

STYLE_DETAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "id",
        "name",
        "url",
        "description",
        "tagline",
        "colours",
        "typography",
        "tone",
        "aesthetic",
        "logoUrl",
    ],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "url": NULLABLE_STRING,
        "description": NULLABLE_STRING,
        "tagline": NULLABLE_STRING,
        "colours": {
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["type", "name", "hex", "role"],
                        "properties": {
                            "type": {"const": "solid"},
                            "name": NAME,
                            "hex": HEX,
                            "role": ROLE,
                        },
                    },
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["type", "name", "gradientSubtype", "stops", "role"],
                        "properties": {
                            "type": {"const": "gradient"},
                            "name": NAME,
                            "gradientSubtype": {"enum": ["linear", "radial"]},
                            "stops": {
                                "type": "array",
                                "minItems": 2,
                                "maxItems": 6,
                                "items": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["hex"],
                                    "properties": {
                                        "hex": HEX,
                                        "positionPct": {
                                            "type": ["number", "null"],
                                            "minimum": 0,
                                            "maximum": 100,
                                        },
                                    },
                                },
                            },
                            "angleDeg": {"type": ["number", "null"]},
                            "role": ROLE,
                        },
                    },
                ]
            },
        },
        "typography": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["fontFamily", "role"],
                "properties": {
                    "fontFamily": {"type": "string", "minLength": 1, "maxLength": 100},
                    "weight": {"enum": ["thin", "regular", "bold", None]},
                    "textTransform": {"enum": ["uppercase", "lowercase", "none", None]},
                    "role": {"enum": ["heading", "body"]},
                },
            },
        },
        "tone": {"type": "array", "items": {"type": "string"}},
        "aesthetic": {"type": "string"},
        "logoUrl": NULLABLE_STRING,
    },
}

_validator = Draft202012Validator(STYLE_DETAIL_SCHEMA)


class InvalidStyle(Exception):
    """The pipeline built a style that breaks the schema: a bug here, never the site's fault."""


def validate_style(style: dict[str, Any]) -> None:
    errors = sorted(_validator.iter_errors(style), key=lambda error: list(error.path))
    if errors:
        where = "/".join(str(part) for part in errors[0].path) or "(root)"
        raise InvalidStyle(f"style breaks the schema at {where}: {errors[0].message}")
