"""The one error envelope: `{"error": {"code", "message", "details"}}` for every non-2xx.

Every refusal is a `core.errors.DomainError` (the gateway's own are `ApiError`s) and reaches the
client through one handler, `error_response`; request bodies that fail validation become
`InvalidInput` with a field path -> reason map."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.db import DATABASE_UNAVAILABLE
from core.errors import DomainError, InvalidInput, envelope
from core.storage import StorageError
from gateway.responses import JsonResponse

log = logging.getLogger(__name__)

STATUS_CODES = {
    400: "VALIDATION_ERROR",
    401: "UNAUTHORIZED",
    402: "INSUFFICIENT_CREDITS",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "IDEMPOTENCY_KEY_REUSED",
    429: "RATE_LIMIT_ERROR",
    500: "INTERNAL_ERROR",
    501: "NOT_IMPLEMENTED",
    503: "SERVICE_UNAVAILABLE",
}


class ApiError(DomainError):
    """A refusal the gateway makes itself, before or outside any service (a missing key, a rate
    limit, a bad file signature, a body too large, a dependency down): its status and code are
    its own, and it may carry headers."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, details)
        self.status = status
        self.code = code
        self.headers = dict(headers or {})


def unauthorized() -> ApiError:
    return ApiError(401, "UNAUTHORIZED", "Invalid API key")


# What a 503 for a dependency out of reach tells the client to wait before retrying.
UNAVAILABLE_RETRY_AFTER_SECONDS = 2


def service_unavailable(message: str) -> ApiError:
    """A dependency (the database, the file store) is out of reach: nothing half-done, retry."""
    return ApiError(
        503,
        "SERVICE_UNAVAILABLE",
        message,
        headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_SECONDS)},
    )


def database_unavailable() -> ApiError:
    return service_unavailable("The database is unavailable; nothing was changed, retry shortly")


def storage_unavailable() -> ApiError:
    return service_unavailable("The file store is unavailable; retry shortly")


def error_response(error: DomainError) -> JsonResponse:
    """Any refusal, the core's or the gateway's own, in the one envelope with its status (and
    `Retry-After` when it lifts with time)."""
    headers = dict(error.headers) if isinstance(error, ApiError) else {}
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    return JsonResponse(
        envelope(error.code, error.message, error.details),
        status_code=error.status,
        headers=headers,
    )


def field_path(location: tuple[Any, ...]) -> str:
    """('body', 'references', 2) -> 'references[2]'; ('query', 'limit') -> 'limit'."""
    parts = list(
        location[1:]
        if location and location[0] in ("body", "query", "path", "header")
        else location
    )
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


def _number(value: Any) -> Any:
    """15.0 -> 15, so bounds read as the spec writes them."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _reason(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "json_invalid":
        return "is not valid JSON"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return "must be a JSON object"
    if kind == "string_too_short":
        return f"must be at least {ctx.get('min_length')} character(s)"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} items"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} items"
    if kind in ("greater_than_equal", "greater_than"):
        bound = _number(ctx.get("ge", ctx.get("gt")))
        return f"must be {'at least' if kind == 'greater_than_equal' else 'greater than'} {bound}"
    if kind in ("less_than_equal", "less_than"):
        bound = _number(ctx.get("le", ctx.get("lt")))
        return f"must be {'at most' if kind == 'less_than_equal' else 'less than'} {bound}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    if kind in ("string_type", "str_type"):
        return "must be a string"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "must be an integer"
    if kind in ("float_type", "float_parsing"):
        return "must be a number"
    if kind in ("bool_type", "bool_parsing"):
        return "must be true or false"
    if kind == "list_type":
        return "must be an array"
    if kind == "string_pattern_mismatch":
        return "has an invalid format"
    if kind == "uuid_parsing" or kind == "uuid_type":
        return "must be a UUID"
    message = str(error.get("msg", "is invalid"))
    return message.removeprefix("Value error, ")


def validation_details(errors: list[Any]) -> dict[str, str]:
    details: dict[str, str] = {}
    for error in errors:
        details.setdefault(field_path(tuple(error.get("loc", ()))), _reason(error))
    return details


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _refused(_request: Request, error: DomainError) -> JsonResponse:
        return error_response(error)

    async def _database_down(_request: Request, error: Exception) -> JsonResponse:
        log.warning("database unavailable: %s", str(error).partition("\n")[0])
        return error_response(database_unavailable())

    for error_class in DATABASE_UNAVAILABLE:
        app.add_exception_handler(error_class, _database_down)

    @app.exception_handler(StorageError)
    async def _storage_down(_request: Request, error: StorageError) -> JsonResponse:
        # A request that needed the store (an upload's complete, a deletion) changed nothing
        # it could not finish: the client may retry.
        log.warning("file store unavailable: %s", str(error).partition("\n")[0])
        return error_response(storage_unavailable())

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, error: RequestValidationError) -> JsonResponse:
        return error_response(InvalidInput(validation_details(list(error.errors()))))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, error: StarletteHTTPException) -> JsonResponse:
        code = STATUS_CODES.get(error.status_code, "ERROR")
        message = {404: "Not found", 405: "Method not allowed"}.get(
            error.status_code, str(error.detail)
        )
        return JsonResponse(
            envelope(code, message), status_code=error.status_code, headers=error.headers
        )

    @app.exception_handler(Exception)
    async def _crash(_request: Request, error: Exception) -> JsonResponse:
        log.exception("unhandled error", exc_info=error)
        return JsonResponse(envelope("INTERNAL_ERROR", "Internal server error"), status_code=500)
