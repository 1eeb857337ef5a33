"""The OpenAPI document: valid, public, complete, and honoured by the running service."""

from __future__ import annotations

import httpx
import pytest
from openapi_spec_validator import validate

from tests.support.service import Service

SPEC_PATHS = {
    ("post", "/v1/images/generate"),
    ("post", "/v1/images/edit"),
    ("post", "/v1/images/resize"),
    ("post", "/v1/images/upscale"),
    ("get", "/v1/images/{id}"),
    ("post", "/v1/videos/image-to-video"),
    ("post", "/v1/videos/frames"),
    ("get", "/v1/videos/{id}"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{id}"),
    ("post", "/v1/jobs/{id}/cancel"),
    ("post", "/v1/styles/extract"),
    ("get", "/v1/styles/extractions/{id}"),
    ("get", "/v1/styles"),
    ("get", "/v1/styles/{id}"),
    ("post", "/v1/styles/{id}/search"),
    ("post", "/v1/uploads"),
    ("post", "/v1/uploads/{uploadId}/complete"),
    ("get", "/v1/account"),
}
SPEC_SCHEMAS = {
    "Job",
    "StyleDetail",
    "StyleSummary",
    "SearchHit",
    "SolidColour",
    "GradientColour",
    "TypographyItem",
    "GenerateRequest",
    "EditRequest",
    "ResizeRequest",
    "UpscaleRequest",
    "ImageToVideoRequest",
    "FramesRequest",
    "PresignRequest",
    "CompletedUpload",
    "AccountView",
    "ErrorEnvelope",
}


@pytest.fixture(scope="module")
def document(service: Service) -> dict:
    response = httpx.get(f"{service.api}/openapi.json")  # no key
    assert response.status_code == 200
    return response.json()


def test_document_is_valid_openapi(document: dict) -> None:
    validate(document)
    assert document["info"]["version"] == "v1"


def test_document_covers_every_spec_path_and_schema(document: dict) -> None:
    operations = {(method, path) for path, item in document["paths"].items() for method in item}
    assert operations >= SPEC_PATHS
    assert set(document["components"]["schemas"]) >= SPEC_SCHEMAS
    for path, item in document["paths"].items():
        for operation in item.values():
            assert "422" not in operation["responses"] or path.startswith(
                ("/v1/images", "/v1/videos", "/v1/styles/extract")
            )
            assert operation["security"]


def test_request_schemas_forbid_unknown_fields(document: dict) -> None:
    generate = document["components"]["schemas"]["GenerateRequest"]
    assert generate["additionalProperties"] is False
    assert generate["properties"]["variations"]["maximum"] == 4
    assert generate["required"] == ["prompt"]
    style = document["components"]["schemas"]["StyleDetail"]
    assert style["additionalProperties"] is False
    assert set(style["required"]) == {
        "id", "name", "url", "description", "tagline", "colours", "typography", "tone",
        "aesthetic", "logoUrl",
    }  # fmt: skip


def test_style_assets_extension_is_documented(document: dict) -> None:
    paths = document["paths"]
    assert {"get", "post"} <= set(paths["/v1/styles/{id}/assets"])
    link = document["components"]["schemas"]["LinkAssetsRequest"]
    assert link["properties"]["images"]["minItems"] == 1
    assert link["properties"]["images"]["maxItems"] == 20
    search = document["components"]["schemas"]["SearchRequest"]
    assert search["properties"]["limit"] == {
        "type": "integer", "maximum": 50, "minimum": 1, "title": "Limit", "default": 10
    }  # fmt: skip
    assert set(document["components"]["schemas"]["SearchHit"]["required"]) == {
        "id", "name", "url", "similarity"
    }  # fmt: skip
