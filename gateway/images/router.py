"""Image creates: generate, edit, resize (reframe), upscale."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from core.accounts.service import Caller
from core.jobs.creation import (
    EditJobRequest,
    GenerateJobRequest,
    ReframeJobRequest,
    UpscaleJobRequest,
)
from gateway.auth import current_caller
from gateway.contract import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope
from gateway.images.schemas import EditRequest, GenerateRequest, ResizeRequest, UpscaleRequest
from gateway.jobs.creation import IdempotencyKey, accepted, claim_for, create_job
from gateway.runtime import Gateway, get_gateway

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/images/generate", status_code=202, response_model=JobEnvelope, summary="Generate images"
)
def generate(
    request: Request,
    response: Response,
    body: GenerateRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_request = GenerateJobRequest(
        prompt=body.prompt,
        aspect_ratio=body.aspectRatio,
        quality=body.quality,
        resolution=body.resolution,
        variations=body.variations,
        style_id=body.styleId,
        references=body.references,
    )
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)


@router.post(
    "/images/edit", status_code=202, response_model=JobEnvelope, summary="Edit a prior image"
)
def edit(
    request: Request,
    response: Response,
    body: EditRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_request = EditJobRequest(
        image_id=body.imageId, prompt=body.prompt, style_id=body.styleId, references=body.references
    )
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)


@router.post(
    "/images/resize",
    status_code=202,
    response_model=JobEnvelope,
    summary="Reframe a prior image to another aspect ratio",
)
def resize(
    request: Request,
    response: Response,
    body: ResizeRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_request = ReframeJobRequest(
        image_id=body.imageId, aspect_ratio=body.aspectRatio, resolution=body.resolution
    )
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)


@router.post(
    "/images/upscale", status_code=202, response_model=JobEnvelope, summary="Upscale a prior image"
)
def upscale(
    request: Request,
    response: Response,
    body: UpscaleRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_request = UpscaleJobRequest(image_id=body.imageId, resolution=body.resolution)
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)
