"""The OpenAPI document: generated from the request/response models, tuned to the contract and
to code generators (a tag per resource, camelCase verb operation ids taken from the route
functions' names, a request example on every create, the error envelope on every error status
an operation really answers)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

SECURITY_SCHEMES = {
    "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key"},
    "BearerAuth": {"type": "http", "scheme": "bearer"},
}
TAGS = [
    {"name": "images", "description": "Generate, edit, reframe and upscale images"},
    {"name": "videos", "description": "Animate an image, or transition between two frames"},
    {"name": "jobs", "description": "Every create answers a job: read, list, stream, cancel"},
    {"name": "styles", "description": "Brand styles extracted from websites, and their assets"},
    {"name": "uploads", "description": "Upload images to use as inputs"},
    {"name": "account", "description": "The API key's account"},
    {"name": "models", "description": "The models this deployment serves (extension)"},
    {"name": "webhooks", "description": "Where the account's job events are sent, signed"},
]
ERROR_ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}
# Every operation can meet these: a database out of reach answers 503 with `Retry-After`.
UNAVAILABLE = "The database is unavailable; nothing was changed (SERVICE_UNAVAILABLE)"
TOO_LARGE = "Request body over the limit, 64 KiB by default (PAYLOAD_TOO_LARGE)"
EXAMPLE_ID = "3f2a9c4e-8b1d-4e6f-a7c2-5d9e0b1f4a63"
# A request example for every operation that takes a body, by operation id.
REQUEST_EXAMPLES: dict[str, dict[str, Any]] = {
    "generateImage": {
        "prompt": "a lighthouse on a cliff at dawn, soft light",
        "aspectRatio": "16:9",
        "quality": "high",
        "resolution": "2K",
        "variations": 2,
    },
    "editImage": {"imageId": EXAMPLE_ID, "prompt": "make the sky stormy"},
    "resizeImage": {"imageId": EXAMPLE_ID, "aspectRatio": "21:9", "resolution": "2K"},
    "upscaleImage": {"imageId": EXAMPLE_ID, "resolution": "4K"},
    "imageToVideo": {
        "image": EXAMPLE_ID,
        "prompt": "waves roll in, the light sweeps slowly",
        "duration": 6,
        "resolution": "720p",
        "audio": True,
    },
    "framesToVideo": {
        "startImage": EXAMPLE_ID,
        "endImage": "https://example.com/dusk.png",
        "prompt": "day turns to dusk",
        "duration": 6,
    },
    "extractStyle": {"url": "https://example.com"},
    "searchStyle": {"query": "warm product shots on wood", "limit": 10},
    "addStyleAssets": {"images": [EXAMPLE_ID, "https://example.com/brand/hero.png"]},
    "createUpload": {"filename": "photo.png", "contentType": "image/png"},
    "createWebhook": {"url": "https://example.com/sfumato", "events": ["completed", "failed"]},
}


JOB_ID = {"id": "$response.body#/data/id"}
JOB_LINKS = {
    "GetJob": {"operationId": "getJob", "parameters": JOB_ID},
    "CancelJob": {"operationId": "cancelJob", "parameters": JOB_ID},
    "StreamJobEvents": {"operationId": "streamJobEvents", "parameters": JOB_ID},
}
# Where an answer leads (OpenAPI links, followed by stateful tests and some generators).
LINKS: dict[str, dict[str, Any]] = {
    **{
        create: {
            "202": {
                **JOB_LINKS,
                "GetImageJob": {"operationId": "getImageJob", "parameters": JOB_ID},
            }
        }
        for create in ("generateImage", "editImage", "resizeImage", "upscaleImage")
    },
    **{
        create: {
            "202": {
                **JOB_LINKS,
                "GetVideoJob": {"operationId": "getVideoJob", "parameters": JOB_ID},
            }
        }
        for create in ("imageToVideo", "framesToVideo")
    },
    "extractStyle": {
        "202": {
            **JOB_LINKS,
            "GetStyleExtraction": {"operationId": "getStyleExtraction", "parameters": JOB_ID},
        }
    },
    "createUpload": {
        "200": {
            "CompleteUpload": {
                "operationId": "completeUpload",
                "parameters": {"uploadId": "$response.body#/data/uploadId"},
            }
        }
    },
}


def operation_id(route: APIRoute) -> str:
    """`generate_image` -> `generateImage`: every route function is named for what it does."""
    first, *rest = route.name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_ENVELOPE}}}


def _tune_operation(path: str, operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    # Validation failures are our 400 envelope, never FastAPI's 422 shape.
    if "422" in responses and "IDEMPOTENCY" not in str(responses["422"]):
        del responses["422"]
    operation["tags"] = [path.split("/")[2]]
    operation["security"] = [{"ApiKeyHeader": []}, {"BearerAuth": []}]
    responses.setdefault("503", _error(UNAVAILABLE))
    body = operation.get("requestBody")
    if body is not None:
        responses.setdefault("413", _error(TOO_LARGE))
        example = REQUEST_EXAMPLES.get(operation["operationId"])
        if example is not None:
            body["content"]["application/json"]["example"] = example
    operation.setdefault("description", operation.get("summary", ""))
    for status, links in LINKS.get(operation["operationId"], {}).items():
        responses[status]["links"] = links


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title="Sfumato",
            version="v1",
            description=(
                "Asynchronous image and video generation, brand styles and uploads. Every "
                "create answers 202 with a job; read it (`wait=true` long-polls), or follow "
                "it with `GET /v1/jobs/{id}/events` (Server-Sent Events)."
            ),
            routes=app.routes,
            tags=TAGS,
            # Relative: the deployment that serves this document (paths carry `/v1`).
            servers=[{"url": "/", "description": "The deployment serving this document"}],
        )
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                _tune_operation(path, operation)
        components = schema.setdefault("components", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.get("schemas", {}).pop(unused, None)
        components["securitySchemes"] = SECURITY_SCHEMES
        app.openapi_schema = schema
        return schema

    app.openapi = build  # type: ignore[method-assign]
