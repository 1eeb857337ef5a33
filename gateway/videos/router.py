"""Video creates: image-to-video and start/end-frame transitions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from core.accounts.service import Caller
from gateway.auth import current_caller
from gateway.contract import CREATE_ERROR_RESPONSES, NOT_YET_RESPONSES, ContractRoute, JobEnvelope
from gateway.not_yet import not_implemented
from gateway.videos.schemas import FramesRequest, ImageToVideoRequest

router = APIRouter(
    route_class=ContractRoute, responses={**CREATE_ERROR_RESPONSES, **NOT_YET_RESPONSES}
)


@router.post(
    "/videos/image-to-video",
    status_code=202,
    response_model=JobEnvelope,
    summary="Animate one image",
)
def image_to_video(body: ImageToVideoRequest, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Image-to-video")


@router.post(
    "/videos/frames",
    status_code=202,
    response_model=JobEnvelope,
    summary="Transition from a start frame to an end frame",
)
def frames(body: FramesRequest, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Frame transitions")
