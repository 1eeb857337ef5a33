"""Job reads (with long-poll), the job list and cancel; also the per-type read aliases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from core.accounts.service import Caller
from core.ids import parse_uuid
from core.jobs import service as jobs_service
from core.jobs.contract import IMAGE_TYPES, TERMINAL, JobType
from core.pagination import BadCursor
from gateway.auth import current_caller
from gateway.contract import ERROR_RESPONSES, ContractRoute, JobEnvelope, JobPage
from gateway.errors import not_found, validation_error
from gateway.jobs.presenter import JobLike, JobPresenter
from gateway.reads import run_read
from gateway.runtime import Gateway, get_gateway

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)

VIDEO_TYPES = (JobType.VIDEO_GENERATE,)
STYLE_TYPES = (JobType.STYLE_EXTRACT,)
ALL_TYPES = tuple(JobType)

WaitParam = Annotated[
    Literal["true", "false"] | None,
    Query(description="`true` holds the request until the job is terminal (about 55 s at most)"),
]


def presenter_for(request: Request, gateway: Gateway) -> JobPresenter:
    settings = gateway.services.settings
    return JobPresenter(
        gateway.services.storage, str(request.base_url), settings.signed_url_seconds
    )


async def read_job(
    request: Request,
    gateway: Gateway,
    caller: Caller,
    raw_id: str,
    types: Sequence[str],
    wait: str | None,
) -> JSONResponse:
    """The caller's job of one of `types`, after waiting for a terminal state if asked."""
    job_id = parse_uuid(raw_id)
    if job_id is None:
        raise not_found("Job")
    db = gateway.services.db

    def load() -> JobLike | None:
        job = jobs_service.view_owned(db, caller.account_id, job_id)
        return job if job is not None and job.type in types else None

    if wait != "true":
        job = await run_read(db, load)
    else:
        job = await _wait_for_terminal(gateway, job_id, load)
    if job is None:
        raise not_found("Job")
    return JSONResponse({"data": presenter_for(request, gateway).job(job)})


async def _wait_for_terminal(
    gateway: Gateway, job_id: str, load: Callable[[], JobLike | None]
) -> JobLike | None:
    """Hold until the job is terminal or the wait runs out; wake-ups are pushed, not polled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gateway.services.settings.wait_seconds
    db = gateway.services.db
    async with gateway.services.events.subscribe(job_id) as changed:
        job = await run_read(db, load)
        while job is not None and job.status not in TERMINAL:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                break
            changed.clear()
            job = await run_read(db, load)
    return job


@router.get("/jobs/{id}", response_model=JobEnvelope, summary="Get any job")
async def get_job(
    request: Request,
    id: str,
    wait: WaitParam = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    return await read_job(request, gateway, caller, id, ALL_TYPES, wait)


@router.get("/images/{id}", response_model=JobEnvelope, summary="Get an image job")
async def get_image_job(
    request: Request,
    id: str,
    wait: WaitParam = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    return await read_job(request, gateway, caller, id, IMAGE_TYPES, wait)


@router.get("/videos/{id}", response_model=JobEnvelope, summary="Get a video job")
async def get_video_job(
    request: Request,
    id: str,
    wait: WaitParam = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    return await read_job(request, gateway, caller, id, VIDEO_TYPES, wait)


@router.get(
    "/styles/extractions/{id}", response_model=JobEnvelope, summary="Get a style extraction job"
)
async def get_style_job(
    request: Request,
    id: str,
    wait: WaitParam = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    return await read_job(request, gateway, caller, id, STYLE_TYPES, wait)


@router.get("/jobs", response_model=JobPage, summary="List image jobs, newest first")
def list_jobs(
    request: Request,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
    status: Literal["pending", "processing", "completed", "failed"] | None = None,
    type: Annotated[
        Literal["image.generate", "image.edit", "video.generate"] | None,
        Query(description="Extension: `video.generate` lists video jobs instead"),
    ] = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    types = (type,) if type else IMAGE_TYPES
    try:
        jobs, next_cursor = jobs_service.list_page(
            gateway.services.db, caller.account_id, types, status, cursor, limit
        )
    except BadCursor:
        raise validation_error({"cursor": "is not a cursor this service issued"}) from None
    presenter = presenter_for(request, gateway)
    return {"data": [presenter.job(job) for job in jobs], "nextCursor": next_cursor}


@router.post("/jobs/{id}/cancel", response_model=JobEnvelope, summary="Cancel an in-flight job")
def cancel_job(
    request: Request,
    id: str,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_id = parse_uuid(id)
    if job_id is None:
        raise not_found("Job")
    job = gateway.lifecycle.cancel(caller.account_id, job_id)
    if job is None:
        raise not_found("Job")
    return {"data": presenter_for(request, gateway).job(job)}
