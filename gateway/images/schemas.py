"""Request bodies of the image operations (SPEC.md "Images"); their bounds are core's
(`core/jobs/contract.py`)."""

from __future__ import annotations

from pydantic import Field

from core.jobs.contract import (
    GenerateAspectRatio,
    ImageResolution,
    Prompt,
    Quality,
    References,
    ResizeAspectRatio,
    Variations,
)
from gateway.contract import RequestModel, UUIDString


class GenerateRequest(RequestModel):
    prompt: Prompt
    aspectRatio: GenerateAspectRatio = "1:1"
    quality: Quality = "medium"
    resolution: ImageResolution = "1K"
    styleId: UUIDString | None = None
    references: References = Field(default_factory=list)
    variations: Variations = 1


class EditRequest(RequestModel):
    imageId: UUIDString
    prompt: Prompt
    styleId: UUIDString | None = None
    references: References = Field(default_factory=list)


class ResizeRequest(RequestModel):
    imageId: UUIDString
    aspectRatio: ResizeAspectRatio
    resolution: ImageResolution = "1K"


class UpscaleRequest(RequestModel):
    imageId: UUIDString
    resolution: ImageResolution
