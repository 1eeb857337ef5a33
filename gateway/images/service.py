"""The rules of image creates: resolve what the body names, size and price it, create, publish."""

from __future__ import annotations

from core.accounts.service import Caller
from core.jobs import service as jobs_service
from core.models import Job
from core.prices import price_of
from core.references.service import Reference, UnresolvedReferences, resolve_references
from core.sizes import image_size
from gateway.errors import validation_error
from gateway.images.schemas import GenerateRequest
from gateway.jobs.creation import create_job
from gateway.runtime import Gateway


def generate(
    gateway: Gateway,
    caller: Caller,
    body: GenerateRequest,
    claim: jobs_service.IdempotencyClaim | None,
) -> tuple[Job, bool]:
    unresolved: dict[str, str] = {}
    if body.styleId is not None:
        unresolved["styleId"] = "style not found"
    references: dict[str, Reference] = {}
    try:
        references = resolve_references(
            gateway.services,
            caller.account_id,
            {f"references[{index}]": value for index, value in enumerate(body.references)},
        )
    except UnresolvedReferences as error:
        unresolved.update(error.details)
    if unresolved:
        raise validation_error(unresolved, "A referenced resource could not be resolved")
    width, height = image_size(body.aspectRatio, body.resolution)
    inputs = {
        "prompt": body.prompt,
        "aspectRatio": body.aspectRatio,
        "quality": body.quality,
        "resolution": body.resolution,
        "variations": body.variations,
        "width": width,
        "height": height,
        "styleId": None,
        "references": [reference.as_input() for reference in references.values()],
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
