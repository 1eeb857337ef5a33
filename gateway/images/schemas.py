"""Request bodies of the image operations (SPEC.md "Images")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from gateway.contract import Prompt, ReferenceImage, RequestModel, UUIDString

GenerateAspectRatio = Literal["1:1", "3:2", "2:3", "4:3", "3:4", "4:5", "5:4", "16:9", "9:16"]
ResizeAspectRatio = Literal[
    "1:1", "1:4", "1:8", "2:3", "3:2", "3:4", "4:1", "4:3", "4:5", "5:4", "8:1", "9:16", "16:9",
    "21:9",
]  # fmt: skip
Quality = Literal["low", "medium", "high"]
Resolution = Literal["1K", "2K", "4K"]
References = Annotated[list[ReferenceImage], Field(max_length=4)]


class GenerateRequest(RequestModel):
    prompt: Prompt
    aspectRatio: GenerateAspectRatio = "1:1"
    quality: Quality = "medium"
    resolution: Resolution = "1K"
    styleId: UUIDString | None = None
    references: References = Field(default_factory=list)
    variations: Annotated[int, Field(ge=1, le=4)] = 1


class EditRequest(RequestModel):
    imageId: UUIDString
    prompt: Prompt
    styleId: UUIDString | None = None
    references: References = Field(default_factory=list)


class ResizeRequest(RequestModel):
    imageId: UUIDString
    aspectRatio: ResizeAspectRatio
    resolution: Resolution = "1K"


class UpscaleRequest(RequestModel):
    imageId: UUIDString
    resolution: Resolution
