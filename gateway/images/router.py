"""Image creates: generate, edit, resize (reframe), upscale; each body is core's request."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from core.jobs.requests import EditRequest, GenerateRequest, ResizeRequest, UpscaleRequest
from gateway.jobs.submission import SubmitDep
from gateway.schemas import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/images/generate", status_code=202, response_model=JobEnvelope, summary="Generate images"
)
def generate_image(body: GenerateRequest, submit: SubmitDep) -> Any:
    return submit(body)


@router.post(
    "/images/edit", status_code=202, response_model=JobEnvelope, summary="Edit a prior image"
)
def edit_image(body: EditRequest, submit: SubmitDep) -> Any:
    return submit(body)


@router.post(
    "/images/resize",
    status_code=202,
    response_model=JobEnvelope,
    summary="Reframe a prior image to another aspect ratio",
)
def resize_image(body: ResizeRequest, submit: SubmitDep) -> Any:
    return submit(body)


@router.post(
    "/images/upscale", status_code=202, response_model=JobEnvelope, summary="Upscale a prior image"
)
def upscale_image(body: UpscaleRequest, submit: SubmitDep) -> Any:
    return submit(body)
