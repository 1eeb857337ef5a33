"""One exception family: `APIError`, subclassed per error code of the API's envelope.

The server is the one judge of input: a 400 arrives as `ValidationError` with the server's
`details` (field path -> reason); the client keeps no second copy of the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sfumato_client.models import JobData


class APIError(Exception):
    """An error answer of the API (`status`, `code`, `message`, `details` from its envelope), a
    connection that could not be made, or a job that failed."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details
        self.headers = headers or {}


class ValidationError(APIError):
    """400 VALIDATION_ERROR: `details` names each offending field and why."""


class AuthenticationError(APIError):
    """401 UNAUTHORIZED: the key is missing, malformed, unknown, deactivated, revoked or
    expired."""


class InsufficientCreditsError(APIError):
    """402 INSUFFICIENT_CREDITS: the balance cannot cover the request."""

    @property
    def credits_required(self) -> int | None:
        return (self.details or {}).get("creditsRequired")

    @property
    def credits_available(self) -> int | None:
        return (self.details or {}).get("creditsAvailable")


class SubscriptionRequiredError(APIError):
    """402 SUBSCRIPTION_REQUIRED: the plan does not include the operation."""


class NotFoundError(APIError):
    """404 NOT_FOUND (also an id of another account's resource, or a route this server lacks)."""


class IdempotencyKeyReusedError(APIError):
    """422 IDEMPOTENCY_KEY_REUSED: one Idempotency-Key sent with two different requests."""


class _RetryAfter(APIError):
    @property
    def retry_after(self) -> float | None:
        value = self.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None


class RateLimitError(_RetryAfter):
    """429 RATE_LIMIT_ERROR: the key's per-minute limit; `retry_after` in seconds."""


class UsageLimitError(_RetryAfter):
    """429 USAGE_LIMIT_EXCEEDED: the plan's daily generation cap is spent."""


class ConcurrencyLimitError(_RetryAfter):
    """429 CONCURRENT_LIMIT_REACHED: too many in-flight generations (`details`: limit,
    inFlight)."""


class InternalServerError(APIError):
    """5xx: a server failure (retried automatically before it is raised)."""


class APIConnectionError(APIError):
    """The server could not be reached, or the connection broke, on every attempt."""


class JobFailedError(APIError):
    """`wait()` found the job `failed` (the API's GENERATION_FAILED); the job is attached."""

    def __init__(self, job: JobData) -> None:
        message = job.error.message if job.error else "Job failed"
        super().__init__(message, code=job.error.code if job.error else "GENERATION_FAILED")
        self.job = job


class JobTimeoutError(APIError, TimeoutError):
    """`wait(timeout=...)` ran out before the job was terminal; the last job seen is attached."""

    def __init__(self, job: JobData, timeout: float) -> None:
        super().__init__(f"job {job.id} still {job.status} after {timeout:g} s")
        self.job = job


ERRORS_BY_CODE: dict[str, type[APIError]] = {
    "VALIDATION_ERROR": ValidationError,
    "UNAUTHORIZED": AuthenticationError,
    "INSUFFICIENT_CREDITS": InsufficientCreditsError,
    "SUBSCRIPTION_REQUIRED": SubscriptionRequiredError,
    "NOT_FOUND": NotFoundError,
    "IDEMPOTENCY_KEY_REUSED": IdempotencyKeyReusedError,
    "RATE_LIMIT_ERROR": RateLimitError,
    "USAGE_LIMIT_EXCEEDED": UsageLimitError,
    "CONCURRENT_LIMIT_REACHED": ConcurrencyLimitError,
    "INTERNAL_ERROR": InternalServerError,
}


def error_from_response(status: int, body: Any, headers: dict[str, str]) -> APIError:
    """The exception for an error answer: by the envelope's code, else by the HTTP status."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"message": f"HTTP {status}"}
    code = error.get("code")
    cls = ERRORS_BY_CODE.get(code or "")
    if cls is None:
        cls = InternalServerError if status >= 500 else APIError
    return cls(
        str(error.get("message") or f"HTTP {status}"),
        status=status,
        code=code,
        details=error.get("details"),
        headers={key.lower(): value for key, value in headers.items()},
    )
