"""The client's models against the served /v1/openapi.json: every schema of the document is
accounted for, and every field of each matches in name, kind, nullability and requiredness, so
the client and the server cannot drift apart."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from sfumato_client import models
from sfumato_client.errors import APIError
from tests.support.service import Service

pytestmark = pytest.mark.slow

# Served schema -> the client model that reads it.
RESPONSES: dict[str, type[BaseModel]] = {
    "Job": models.JobData,
    "JobResult": models.JobResult,
    "JobError": models.JobError,
    "ResultImage": models.ResultImage,
    "ResultVideo": models.ResultVideo,
    "ResultStyle": models.ResultStyle,
    "StyleDetail": models.Style,
    "SolidColour": models.SolidColour,
    "GradientColour": models.GradientColour,
    "GradientStop": models.GradientStop,
    "TypographyItem": models.TypographyItem,
    "StyleSummary": models.StyleSummary,
    "SearchHit": models.SearchHit,
    "StyleAssetItem": models.StyleAsset,
    "Presigned": models.PresignedUpload,
    "CompletedUpload": models.Upload,
    "AccountView": models.Account,
    "PlanRef": models.Plan,
    "PlanLimits": models.PlanLimits,
    "ServedModelView": models.ServedModel,
    "SettingRange": models.SettingRange,
    "WebhookEndpoint": models.WebhookEndpoint,
    "WebhookSecret": models.WebhookSecret,
    "WebhookAttempt": models.WebhookAttempt,
    "WebhookDelivery": models.WebhookDelivery,
}
# Served request body -> the client model that writes it.
REQUESTS: dict[str, type[BaseModel]] = {
    "GenerateRequest": models.GenerateRequest,
    "EditRequest": models.EditRequest,
    "ResizeRequest": models.ResizeRequest,
    "UpscaleRequest": models.UpscaleRequest,
    "ImageToVideoRequest": models.ImageToVideoRequest,
    "FramesRequest": models.FramesRequest,
    "ExtractRequest": models.ExtractRequest,
    "SearchRequest": models.SearchRequest,
    "LinkAssetsRequest": models.LinkAssetsRequest,
    "PresignRequest": models.PresignRequest,
    "Adapter": models.Adapter,
    "WebhookRequest": models.Webhook,
    "CreateWebhookRequest": models.CreateWebhookRequest,
}
# Wrappers the client unwraps (`data`, and `nextCursor` that its iterators follow).
ENVELOPES = {
    "JobEnvelope": {"data"},
    "JobPage": {"data", "nextCursor"},
    "StyleEnvelope": {"data"},
    "StylePage": {"data", "nextCursor"},
    "SearchResults": {"data"},
    "StyleAssets": {"data"},
    "StyleAssetPage": {"data", "nextCursor"},
    "PresignEnvelope": {"data"},
    "UploadEnvelope": {"data"},
    "AccountEnvelope": {"data"},
    "ModelList": {"data"},
    "WebhookEnvelope": {"data"},
    "WebhookList": {"data"},
    "WebhookSecretEnvelope": {"data"},
    "WebhookDeliveryEnvelope": {"data"},
    "WebhookDeliveryList": {"data"},
    "ErrorEnvelope": {"error"},
}


@pytest.fixture(scope="module")
def served(service: Service) -> dict[str, Any]:
    document = httpx.get(service.api + "/openapi.json", timeout=30).json()
    schemas: dict[str, Any] = document["components"]["schemas"]
    return schemas


def kinds(schema: dict[str, Any]) -> set[str]:
    """The JSON kinds a property schema admits (`object` for a reference)."""
    if "anyOf" in schema or "oneOf" in schema:
        return set().union(*(kinds(part) for part in schema.get("anyOf", schema.get("oneOf"))))
    if "allOf" in schema:
        return kinds(schema["allOf"][0])
    if "$ref" in schema:
        return {"object"}
    if "type" in schema:
        kind = schema["type"]
        return set(kind) if isinstance(kind, list) else {kind}
    if "const" in schema:
        return {"null" if schema["const"] is None else type(schema["const"]).__name__}
    return {"any"}


def client_fields(model: type[BaseModel]) -> tuple[dict[str, Any], set[str]]:
    schema = model.model_json_schema(by_alias=True)
    return schema["properties"], set(schema.get("required", []))


def test_every_served_schema_is_accounted_for(served: dict[str, Any]) -> None:
    known = set(RESPONSES) | set(REQUESTS) | set(ENVELOPES) | {"ErrorBody"}
    assert set(served) == known, (
        f"new on the server: {sorted(set(served) - known)}; "
        f"gone from the server: {sorted(known - set(served))}"
    )
    for name, fields in ENVELOPES.items():
        assert set(served[name]["properties"]) == fields, name


def test_the_error_envelope_fills_the_error_family(served: dict[str, Any]) -> None:
    fields = set(served["ErrorBody"]["properties"])
    assert fields == {"code", "message", "details"}
    error = APIError("m", status=400, code="C", details={})
    assert all(hasattr(error, field) for field in fields)


@pytest.mark.parametrize("name", sorted(RESPONSES))
def test_response_models_read_every_served_field(served: dict[str, Any], name: str) -> None:
    properties, required = client_fields(RESPONSES[name])
    served_properties = served[name]["properties"]
    served_required = set(served[name].get("required", []))
    assert set(properties) == set(served_properties), name
    # The client never requires a field the server may leave out.
    assert required <= served_required, name
    for field, schema in served_properties.items():
        served_kinds, client_kinds = kinds(schema), kinds(properties[field])
        assert served_kinds - {"null"} <= client_kinds | {"any"}, (name, field)
        if "null" in served_kinds:
            assert "null" in client_kinds, f"{name}.{field} may be null on the server"


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_request_models_write_every_served_field(served: dict[str, Any], name: str) -> None:
    properties, required = client_fields(REQUESTS[name])
    served_properties = served[name]["properties"]
    assert set(properties) == set(served_properties), name
    assert required == set(served[name].get("required", [])), name
    for field, schema in served_properties.items():
        served_kinds = kinds(schema) - {"null"}
        client_kinds = kinds(properties[field]) - {"null"}
        assert client_kinds <= served_kinds | (
            {"integer"} if "number" in served_kinds else set()
        ), (
            name,
            field,
        )
