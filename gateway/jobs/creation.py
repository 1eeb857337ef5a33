"""The one dependency every create endpoint takes (`CreateJobDep`): called with the parsed body
and the core request the body translates to, it creates (or replays) the job through
`core/jobs/creation.py` and answers the 202 body."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Request, Response
from pydantic import BaseModel

from core.accounts.service import Caller
from core.jobs import service as jobs_service
from core.jobs.creation import JobCreation, JobRequest
from gateway.auth import CallerDep
from gateway.dependencies import CreationDep, MetricsDep, SignerDep
from gateway.jobs.presenter import JobPresenter
from gateway.metrics import GatewayMetrics
from gateway.signing import UrlSigner

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        pattern=r"^[\x20-\x7E]{1,255}$",
        description="Makes the create idempotent for 24 h (1-255 printable ASCII characters)",
    ),
]


@dataclass
class CreateJob:
    """A create request: its path and response, the caller and their `Idempotency-Key`, and
    what of the runtime a create uses (the core's job creation, the metrics, the URL signer)."""

    request: Request
    response: Response
    caller: Caller
    idempotency_key: str | None
    creation: JobCreation
    metrics: GatewayMetrics
    signer: UrlSigner

    def __call__(self, body: BaseModel, job_request: JobRequest) -> dict[str, Any]:
        """Create the job `job_request` asks for (or replay the earlier create with this
        Idempotency-Key, saying so in `Idempotent-Replayed`); the 202 body."""
        created = self.creation.create(self.caller, job_request, self._idempotency(body))
        if created.replayed:
            self.response.headers["Idempotent-Replayed"] = "true"
        else:
            self.metrics.job_created(created.job.type)
        return {"data": JobPresenter(self.signer).created(created.job)}

    def _idempotency(self, body: BaseModel) -> jobs_service.IdempotencyClaim | None:
        """What a retry must repeat to be a replay: the endpoint and the (parsed) body."""
        if self.idempotency_key is None:
            return None
        canonical = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return jobs_service.IdempotencyClaim(
            key=self.idempotency_key,
            endpoint=self.request.url.path,
            body_hash=hashlib.sha256(canonical.encode()).hexdigest(),
        )


async def _create_job(
    request: Request,
    response: Response,
    caller: CallerDep,
    creation: CreationDep,
    metrics: MetricsDep,
    signer: SignerDep,
    idempotency_key: IdempotencyKey = None,
) -> CreateJob:
    return CreateJob(request, response, caller, idempotency_key, creation, metrics, signer)


CreateJobDep = Annotated[CreateJob, Depends(_create_job)]
