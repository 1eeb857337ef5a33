"""Video creates: image-to-video and start/end-frame transitions; each body becomes a core
request."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from core.jobs.creation import AnimateJobRequest, TransitionJobRequest
from gateway.contract import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope
from gateway.jobs.creation import CreateJobDep
from gateway.videos.schemas import FramesRequest, ImageToVideoRequest

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/videos/image-to-video",
    status_code=202,
    response_model=JobEnvelope,
    summary="Animate one image",
)
def image_to_video(body: ImageToVideoRequest, create: CreateJobDep) -> Any:
    return create(
        body,
        AnimateJobRequest(
            image=body.image,
            prompt=body.prompt,
            duration=body.duration,
            resolution=body.resolution,
            audio=body.audio,
            negative_prompt=body.negativePrompt,
        ),
    )


@router.post(
    "/videos/frames",
    status_code=202,
    response_model=JobEnvelope,
    summary="Transition from a start frame to an end frame",
)
def frames_to_video(body: FramesRequest, create: CreateJobDep) -> Any:
    return create(
        body,
        TransitionJobRequest(
            start_image=body.startImage,
            end_image=body.endImage,
            prompt=body.prompt,
            duration=body.duration,
            aspect_ratio=body.aspectRatio,
            resolution=body.resolution,
            audio=body.audio,
            negative_prompt=body.negativePrompt,
        ),
    )
