"""What every create endpoint shares: the `Idempotency-Key` header, the core creation call, and
the 202 answer."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from fastapi import Header, Request, Response
from pydantic import BaseModel

from core.accounts.service import Caller
from core.jobs import service as jobs_service
from core.jobs.creation import CreatedJob, JobRequest
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


def create_job(
    gateway: Gateway,
    caller: Caller,
    job_request: JobRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> CreatedJob:
    """The core create, counted by the gateway's metrics when it made a job."""
    created = gateway.creation.create(caller, job_request, claim)
    if not created.replayed:
        gateway.metrics.job_created(created.job.type)
    return created


def accepted(
    request: Request, response: Response, gateway: Gateway, created: CreatedJob
) -> dict[str, Any]:
    """The 202 body of a create; a replay says so in `Idempotent-Replayed`."""
    if created.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return {"data": presenter_for(request, gateway).created(created.job)}
