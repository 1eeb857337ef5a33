"""The OpenAPI document: generated from the request/response models, tuned to the contract."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

SECURITY_SCHEMES = {
    "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key"},
    "BearerAuth": {"type": "http", "scheme": "bearer"},
}


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title="Sfumato",
            version="v1",
            description="Asynchronous image and video generation, brand styles and uploads.",
            routes=app.routes,
        )
        # Validation failures are our 400 envelope, never FastAPI's 422 shape.
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.get("responses", {})
                if "422" in responses and "IDEMPOTENCY" not in str(responses["422"]):
                    del responses["422"]
                if path != "/v1/openapi.json":
                    operation["security"] = [{"ApiKeyHeader": []}, {"BearerAuth": []}]
        components = schema.setdefault("components", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.get("schemas", {}).pop(unused, None)
        components["securitySchemes"] = SECURITY_SCHEMES
        app.openapi_schema = schema
        return schema

    app.openapi = build  # type: ignore[method-assign]
