"""Video creates: image-to-video and start/end-frame transitions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from core.accounts.service import Caller
from core.jobs.creation import AnimateJobRequest, TransitionJobRequest
from gateway.auth import current_caller
from gateway.contract import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope
from gateway.jobs.creation import IdempotencyKey, accepted, claim_for, create_job
from gateway.runtime import Gateway, get_gateway
from gateway.videos.schemas import FramesRequest, ImageToVideoRequest

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/videos/image-to-video",
    status_code=202,
    response_model=JobEnvelope,
    summary="Animate one image",
)
def image_to_video(
    request: Request,
    response: Response,
    body: ImageToVideoRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_request = AnimateJobRequest(
        image=body.image,
        prompt=body.prompt,
        duration=body.duration,
        resolution=body.resolution,
        audio=body.audio,
        negative_prompt=body.negativePrompt,
    )
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)


@router.post(
    "/videos/frames",
    status_code=202,
    response_model=JobEnvelope,
    summary="Transition from a start frame to an end frame",
)
def frames(
    request: Request,
    response: Response,
    body: FramesRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    job_request = TransitionJobRequest(
        start_image=body.startImage,
        end_image=body.endImage,
        prompt=body.prompt,
        duration=body.duration,
        aspect_ratio=body.aspectRatio,
        resolution=body.resolution,
        audio=body.audio,
        negative_prompt=body.negativePrompt,
    )
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)
