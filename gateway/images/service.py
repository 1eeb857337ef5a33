"""The rules of image creates: resolve what the body names, size and price it, create, publish."""

from __future__ import annotations

from typing import Any

from core.accounts.service import Caller
from core.jobs import service as jobs_service
from core.prices import price_of
from core.references.service import (
    Reference,
    SourceImage,
    UnresolvedReferences,
    resolve_references,
    resolve_source_image,
)
from core.sizes import image_size, image_size_for_ratio, resolution_of
from core.styles import service as styles_service
from core.tables import Job
from gateway.errors import validation_error
from gateway.images.schemas import EditRequest, GenerateRequest, ResizeRequest, UpscaleRequest
from gateway.jobs.creation import create_job
from gateway.runtime import Gateway


def generate(
    gateway: Gateway,
    caller: Caller,
    body: GenerateRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    style_hints, references = _lent(gateway, caller, body.styleId, body.references)
    width, height = image_size(body.aspectRatio, body.resolution)
    inputs = {
        "prompt": body.prompt,
        "aspectRatio": body.aspectRatio,
        "quality": body.quality,
        "resolution": body.resolution,
        "variations": body.variations,
        "width": width,
        "height": height,
        "styleId": body.styleId,
        "style": style_hints,
        "references": references,
    }
    return create_job(
        gateway,
        caller,
        jobs_service.NewJob(
            type="image.generate",
            operation="generate",
            queue="image",
            inputs=inputs,
            price=price_of(gateway.services.config.prices, "generate", inputs),
        ),
        claim,
    )


def _lent(
    gateway: Gateway, caller: Caller, style_id: str | None, reference_values: list[str]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """What the caller's style and reference images lend a generate or an edit: the style's
    hints and the resolved references' inputs. Everything that cannot be resolved is named in
    one 400 (`styleId`, `references[i]`)."""
    unresolved: dict[str, str] = {}
    style_hints = None
    if style_id is not None:
        style = styles_service.get_owned(gateway.services.db, caller.account_id, style_id)
        if style is None:
            unresolved["styleId"] = "style not found"
        else:
            style_hints = styles_service.generation_hints(style)
    references: dict[str, Reference] = {}
    try:
        references = resolve_references(
            gateway.services,
            caller.account_id,
            {f"references[{index}]": value for index, value in enumerate(reference_values)},
        )
    except UnresolvedReferences as error:
        unresolved.update(error.details)
    if unresolved:
        raise validation_error(unresolved, "A referenced resource could not be resolved")
    return style_hints, [reference.as_input() for reference in references.values()]


def _source(gateway: Gateway, caller: Caller, image_id: str) -> SourceImage:
    try:
        return resolve_source_image(gateway.services, caller.account_id, image_id)
    except UnresolvedReferences as error:
        raise validation_error(
            error.details, "The image to work on could not be resolved"
        ) from None


def _create_edit_job(
    gateway: Gateway,
    caller: Caller,
    operation: str,
    source: SourceImage,
    inputs: dict[str, Any],
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    """Edit, resize and upscale are all `image.edit` jobs whose parent made their source, so
    the chain of edits can be replayed."""
    inputs = {**inputs, "source": source.reference.as_input()}
    return create_job(
        gateway,
        caller,
        jobs_service.NewJob(
            type="image.edit",
            operation=operation,
            queue="image",
            inputs=inputs,
            price=price_of(gateway.services.config.prices, operation, inputs),
            parent_job_id=source.job_id,
        ),
        claim,
    )


def edit(
    gateway: Gateway,
    caller: Caller,
    body: EditRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    source = _source(gateway, caller, body.imageId)
    style_hints, references = _lent(gateway, caller, body.styleId, body.references)
    width, height = source.reference.width, source.reference.height
    inputs = {
        "imageId": body.imageId,
        "prompt": body.prompt,
        "styleId": body.styleId,
        "style": style_hints,
        "references": references,
        "width": width,
        "height": height,
        "resolution": resolution_of(width, height),
    }
    return _create_edit_job(gateway, caller, "edit", source, inputs, claim)


def resize(
    gateway: Gateway,
    caller: Caller,
    body: ResizeRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    source = _source(gateway, caller, body.imageId)
    width, height = image_size(body.aspectRatio, body.resolution)
    inputs = {
        "imageId": body.imageId,
        "aspectRatio": body.aspectRatio,
        "resolution": body.resolution,
        "width": width,
        "height": height,
    }
    return _create_edit_job(gateway, caller, "reframe", source, inputs, claim)


def upscale(
    gateway: Gateway,
    caller: Caller,
    body: UpscaleRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    source = _source(gateway, caller, body.imageId)
    width, height = image_size_for_ratio(
        source.reference.width, source.reference.height, body.resolution
    )
    inputs = {
        "imageId": body.imageId,
        "resolution": body.resolution,
        "width": width,
        "height": height,
    }
    return _create_edit_job(gateway, caller, "upscale", source, inputs, claim)
