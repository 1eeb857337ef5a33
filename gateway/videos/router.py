"""Video creates: image-to-video and start/end-frame transitions; each body becomes a core
request."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from core.jobs.requests import FramesRequest, ImageToVideoRequest
from gateway.jobs.submission import SubmitDep
from gateway.schemas import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/videos/image-to-video",
    status_code=202,
    response_model=JobEnvelope,
    summary="Animate one image",
)
def image_to_video(body: ImageToVideoRequest, submit: SubmitDep) -> Any:
    return submit(body)


@router.post(
    "/videos/frames",
    status_code=202,
    response_model=JobEnvelope,
    summary="Transition from a start frame to an end frame",
)
def frames_to_video(body: FramesRequest, submit: SubmitDep) -> Any:
    return submit(body)
