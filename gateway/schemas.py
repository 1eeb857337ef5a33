"""The response shapes every resource shares (the job, its envelope and page, the error envelope),
the error answers each route documents, and the route class that renders them. Request bodies
are core's (`core/jobs/requests.py`)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from core.jobs.contract import JobStatusValue, JobTypeValue


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(ResponseModel):
    code: str | None = None
    message: str
    details: dict[str, Any] | None = None


class ErrorEnvelope(ResponseModel):
    error: ErrorBody


class ResultImage(ResponseModel):
    id: str
    url: str
    width: int
    height: int


class ResultVideo(ResponseModel):
    id: str
    url: str
    durationSeconds: float
    thumbnailUrl: str | None
    width: int
    height: int


class ResultStyle(ResponseModel):
    id: str


class JobResult(ResponseModel):
    images: list[ResultImage] | None = None
    video: ResultVideo | None = None
    style: ResultStyle | None = None
    seed: int | None = Field(
        default=None,
        description="Extension: the seed an image or video job ran with (the one asked, else "
        "a random one): the same request with this seed reproduces it (docs/api.md)",
    )
    model: str | None = Field(
        default=None, description="Extension: the model that made the images (GET /v1/models)"
    )


class JobError(ResponseModel):
    code: Literal["GENERATION_FAILED"]
    message: str


class Job(ResponseModel):
    id: str = Field(json_schema_extra={"format": "uuid"})
    type: JobTypeValue
    status: JobStatusValue
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    progress: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "Extension: how far the job is, 0..1, never decreasing; 1 once completed, the last "
            "value reached on a failed job. On every read, not on the create's answer."
        ),
    )
    queuePosition: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Extension, on a pending job's reads only: its place in its queue, 1 = the next to "
            "start, in the order the scheduler starts them (the video line's one video at a "
            "time per account included)."
        ),
    )
    estimatedStartAt: str | None = Field(
        default=None,
        json_schema_extra={"format": "date-time"},
        description=(
            "Extension, on a pending job's reads only: when it should start, from its position "
            "and its queue's recent runs; null when the queue has no run in the last hour."
        ),
    )
    estimatedCompletionAt: str | None = Field(
        default=None,
        json_schema_extra={"format": "date-time"},
        description=(
            "Extension, on a processing job's reads only: when it should finish, at the rate "
            "its progress moved since it started (before it has moved, the queue's recent mean "
            "run); null when neither is known."
        ),
    )
    previewUrl: str | None = Field(
        default=None,
        description=(
            "Extension: while the job is processing, a signed URL of a small JPEG (at most "
            "256 px) of the picture as it forms, renewed every few steps (a new URL each "
            "time); absent when the pipeline has none yet and once the job has ended"
        ),
    )
    result: JobResult | None = None
    error: JobError | None = None
    notes: list[str] | None = Field(
        default=None,
        description="Extension: what the pipeline said about a completed job (what it "
        "understood, what it could not do); empty before completion",
    )


class JobEnvelope(ResponseModel):
    data: Job


class JobPage(ResponseModel):
    data: list[Job]
    nextCursor: str | None


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorEnvelope, "description": description}
    for status, description in {
        400: "Invalid input (VALIDATION_ERROR)",
        401: "Missing or invalid API key (UNAUTHORIZED)",
        404: "Not found (NOT_FOUND)",
        429: "Rate or usage limit (RATE_LIMIT_ERROR, USAGE_LIMIT_EXCEEDED, ...)",
        500: "Server failure (INTERNAL_ERROR)",
    }.items()
}
# A DELETE answers 204 with no body, or 409 when the thing is still needed by a job in flight.
DELETE_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {
        "model": ErrorEnvelope,
        "description": "In use by a pending or processing job (CONFLICT)",
    },
}
CREATE_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    402: {"model": ErrorEnvelope, "description": "INSUFFICIENT_CREDITS or SUBSCRIPTION_REQUIRED"},
    422: {"model": ErrorEnvelope, "description": "IDEMPOTENCY_KEY_REUSED"},
}


class ContractRoute(APIRoute):
    """Responses keep exactly the fields the handler set: `result` and `error` appear only when
    there is one, while a `thumbnailUrl` that is not there yet still shows as null."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["response_model_exclude_unset"] = True
        super().__init__(*args, **kwargs)
