"""The one dependency every create endpoint takes (`SubmitDep`): called with the parsed body (a
`core/jobs/requests.py` request), it has core admit the job (or replay the earlier create with
the same `Idempotency-Key`) and answers the 202 body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Request, Response

from core.accounts.service import Caller
from core.jobs.creation import JobCreation
from core.jobs.requests import JobRequest
from core.jobs.service import IdempotentRequest
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
class JobSubmission:
    """A create request: its path and response, the caller and their `Idempotency-Key`, and
    what of the runtime a create uses (the core's job creation, the metrics, the URL signer)."""

    request: Request
    response: Response
    caller: Caller
    idempotency_key: str | None
    creation: JobCreation
    metrics: GatewayMetrics
    signer: UrlSigner

    def __call__(self, body: JobRequest) -> dict[str, Any]:
        """The job `body` asks for, admitted (or the earlier create with this Idempotency-Key,
        replayed and said so in `Idempotent-Replayed`); the 202 body."""
        idempotency = (
            None
            if self.idempotency_key is None
            else IdempotentRequest.of(self.idempotency_key, self.request.url.path, body)
        )
        created = self.creation.admit(self.caller, body, idempotency)
        if created.replayed:
            self.response.headers["Idempotent-Replayed"] = "true"
        else:
            self.metrics.job_created(created.job.type)
        return {"data": JobPresenter(self.signer).created(created.job)}


async def _submission(
    request: Request,
    response: Response,
    caller: CallerDep,
    creation: CreationDep,
    metrics: MetricsDep,
    signer: SignerDep,
    idempotency_key: IdempotencyKey = None,
) -> JobSubmission:
    return JobSubmission(request, response, caller, idempotency_key, creation, metrics, signer)


SubmitDep = Annotated[JobSubmission, Depends(_submission)]
