"""The one way every create endpoint makes a job: idempotency, limits, credits, publish."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from fastapi import Header, Request, Response
from pydantic import BaseModel

from core.accounts.service import Caller
from core.credits.service import InsufficientCredits
from core.jobs import service as jobs_service
from core.tables import Job
from gateway.errors import ApiError
from gateway.jobs.router import presenter_for
from gateway.runtime import Gateway

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        pattern=r"^[\x20-\x7E]{1,255}$",
        description="Makes the create idempotent for 24 h (1-255 printable ASCII characters)",
    ),
]


def claim_for(
    key: str | None, request: Request, body: BaseModel
) -> jobs_service.IdempotencyClaim | None:
    """What a retry must repeat to be a replay: the endpoint and the (parsed) body."""
    if key is None:
        return None
    canonical = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return jobs_service.IdempotencyClaim(
        key=key,
        endpoint=request.url.path,
        body_hash=hashlib.sha256(canonical.encode()).hexdigest(),
    )


def _refusal(error: Exception) -> ApiError:
    if isinstance(error, InsufficientCredits):
        return ApiError(
            402,
            "INSUFFICIENT_CREDITS",
            "Insufficient credits",
            {"creditsRequired": error.required, "creditsAvailable": error.available},
        )
    if isinstance(error, jobs_service.SubscriptionRequired):
        return ApiError(402, "SUBSCRIPTION_REQUIRED", f"A subscription is required: {error}")
    if isinstance(error, jobs_service.ConcurrentLimitReached):
        return ApiError(
            429,
            "CONCURRENT_LIMIT_REACHED",
            "Too many generations in flight; poll the existing jobs before starting more",
            {"limit": error.limit, "inFlight": error.in_flight},
        )
    if isinstance(error, jobs_service.UsageLimitExceeded):
        return ApiError(
            429,
            "USAGE_LIMIT_EXCEEDED",
            f"Usage limit exceeded: {error}",
            {"dailyLimit": error.cap},
            headers={"Retry-After": str(error.retry_after)},
        )
    if isinstance(error, jobs_service.IdempotencyKeyReused):
        return ApiError(
            422,
            "IDEMPOTENCY_KEY_REUSED",
            "This Idempotency-Key was already used with a different request",
        )
    raise error


def create_job(
    gateway: Gateway,
    caller: Caller,
    new: jobs_service.NewJob,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    """Create (reserving credits, within the plan) and publish; or replay an earlier create."""
    try:
        job, replayed = jobs_service.create(gateway.services.db, caller, new, claim)
    except (InsufficientCredits, jobs_service.CreateRefused) as error:
        raise _refusal(error) from None
    if not replayed:
        gateway.metrics.job_created(job.type)
        gateway.dispatcher.publish_new(job)
    return job, replayed


def accepted(
    request: Request, response: Response, gateway: Gateway, job: Job, replayed: bool
) -> dict[str, Any]:
    """The 202 body of a create; a replay says so in `Idempotent-Replayed`."""
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return {"data": presenter_for(request, gateway).created(job)}
