"""The answer of endpoints whose schemas are modelled but whose work lands in a later release."""

from __future__ import annotations

from gateway.errors import ApiError


def not_implemented(what: str) -> ApiError:
    return ApiError(501, "NOT_IMPLEMENTED", f"{what} is not available in this release yet")
