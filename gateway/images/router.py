"""Image creates: generate, edit, resize (reframe), upscale; each body becomes a core request."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from core.jobs.creation import (
    EditJobRequest,
    GenerateJobRequest,
    ReframeJobRequest,
    UpscaleJobRequest,
)
from gateway.contract import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope
from gateway.images.schemas import EditRequest, GenerateRequest, ResizeRequest, UpscaleRequest
from gateway.jobs.creation import CreateJobDep

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/images/generate", status_code=202, response_model=JobEnvelope, summary="Generate images"
)
def generate_image(body: GenerateRequest, create: CreateJobDep) -> Any:
    return create(
        body,
        GenerateJobRequest(
            prompt=body.prompt,
            aspect_ratio=body.aspectRatio,
            quality=body.quality,
            resolution=body.resolution,
            variations=body.variations,
            style_id=body.styleId,
            references=body.references,
        ),
    )


@router.post(
    "/images/edit", status_code=202, response_model=JobEnvelope, summary="Edit a prior image"
)
def edit_image(body: EditRequest, create: CreateJobDep) -> Any:
    return create(
        body,
        EditJobRequest(
            image_id=body.imageId,
            prompt=body.prompt,
            style_id=body.styleId,
            references=body.references,
        ),
    )


@router.post(
    "/images/resize",
    status_code=202,
    response_model=JobEnvelope,
    summary="Reframe a prior image to another aspect ratio",
)
def resize_image(body: ResizeRequest, create: CreateJobDep) -> Any:
    return create(
        body,
        ReframeJobRequest(
            image_id=body.imageId, aspect_ratio=body.aspectRatio, resolution=body.resolution
        ),
    )


@router.post(
    "/images/upscale", status_code=202, response_model=JobEnvelope, summary="Upscale a prior image"
)
def upscale_image(body: UpscaleRequest, create: CreateJobDep) -> Any:
    return create(body, UpscaleJobRequest(image_id=body.imageId, resolution=body.resolution))
