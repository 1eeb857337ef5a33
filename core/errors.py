"""The refusals of the domain: every rule that says no raises a `DomainError`.

Each carries what a caller needs to act: a stable `code`, the `status` class of the refusal (the
HTTP status the API answers with; other front ends read it as a category), a message, `details`
(field paths and figures, as the API shows them) and, for limits that lift with time, the seconds
after which to retry. Services raise them; `gateway/errors.py` turns every one into the error
envelope in one place, and other callers (the CLI, the dashboard) show the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def envelope(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one error envelope of every non-2xx answer (CONTRACT.md "Errors")."""
    return {"error": {"code": code, "message": message, "details": details}}


class DomainError(Exception):
    status: int = 400
    code: str = "VALIDATION_ERROR"

    def __init__(
        self,
        message: str,
        details: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = dict(details) if details is not None else None
        self.retry_after = retry_after


class InvalidInput(DomainError):
    """Input that breaks a rule; `details` maps each field path to the reason."""

    status = 400
    code = "VALIDATION_ERROR"

    def __init__(self, details: Mapping[str, str], message: str = "Invalid request") -> None:
        super().__init__(message, details)


class Conflict(DomainError):
    """The request is valid but the resource's state does not allow it now."""

    status = 409
    code = "CONFLICT"


class NotFound(DomainError):
    """No such thing belongs to the caller (or the id is not one)."""

    status = 404
    code = "NOT_FOUND"

    def __init__(self, what: str = "Resource") -> None:
        super().__init__(f"{what} not found")
