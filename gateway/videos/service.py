"""The rules of video creates: resolve the frames, size and price the clip, create, publish."""

from __future__ import annotations

from typing import Any

from core.accounts.service import Caller
from core.jobs import service as jobs_service
from core.prices import price_of
from core.references.service import Reference, UnresolvedReferences, resolve_references
from core.sizes import parse_ratio, video_size
from core.tables import Job
from gateway.errors import validation_error
from gateway.jobs.creation import create_job
from gateway.runtime import Gateway
from gateway.videos.schemas import FramesRequest, ImageToVideoRequest


def _resolve(gateway: Gateway, caller: Caller, fields: dict[str, str]) -> dict[str, Reference]:
    try:
        return resolve_references(gateway.services, caller.account_id, fields)
    except UnresolvedReferences as error:
        raise validation_error(error.details, "A frame could not be resolved") from None


def _create_video_job(
    gateway: Gateway,
    caller: Caller,
    operation: str,
    inputs: dict[str, Any],
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    return create_job(
        gateway,
        caller,
        jobs_service.NewJob(
            type="video.generate",
            operation=operation,
            queue="video",
            inputs=inputs,
            price=price_of(gateway.services.config.prices, operation, inputs),
        ),
        claim,
    )


def image_to_video(
    gateway: Gateway,
    caller: Caller,
    body: ImageToVideoRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    image = _resolve(gateway, caller, {"image": body.image})["image"]
    # The clip takes the aspect ratio of its image (CONTRACT.md "Videos").
    width, height = video_size(image.width, image.height, body.resolution)
    inputs = {
        "image": image.as_input(),
        "prompt": body.prompt,
        "negativePrompt": body.negativePrompt,
        "duration": body.duration,
        "resolution": body.resolution,
        "audio": body.audio,
        "width": width,
        "height": height,
    }
    return _create_video_job(gateway, caller, "animate", inputs, claim)


def frames(
    gateway: Gateway,
    caller: Caller,
    body: FramesRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    resolved = _resolve(gateway, caller, {"startImage": body.startImage, "endImage": body.endImage})
    start = resolved["startImage"]
    if body.aspectRatio == "auto":
        ratio: tuple[float, float] = (start.width, start.height)
    else:
        ratio = parse_ratio(body.aspectRatio)
    width, height = video_size(*ratio, body.resolution)
    inputs = {
        "startImage": start.as_input(),
        "endImage": resolved["endImage"].as_input(),
        "prompt": body.prompt,
        "negativePrompt": body.negativePrompt,
        "duration": body.duration,
        "aspectRatio": body.aspectRatio,
        "resolution": body.resolution,
        "audio": body.audio,
        "width": width,
        "height": height,
    }
    return _create_video_job(gateway, caller, "transition", inputs, claim)
