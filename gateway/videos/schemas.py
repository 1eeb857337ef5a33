"""Request bodies of the video operations (SPEC.md "Videos")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from gateway.contract import NegativePrompt, Prompt, ReferenceImage, RequestModel

VideoResolution = Literal["480p", "720p"]


class ImageToVideoRequest(RequestModel):
    image: ReferenceImage
    prompt: Prompt
    duration: Annotated[float, Field(ge=1, le=15)] = 6
    resolution: VideoResolution = "720p"
    audio: bool = True
    negativePrompt: NegativePrompt | None = None


class FramesRequest(RequestModel):
    startImage: ReferenceImage
    endImage: ReferenceImage
    prompt: Prompt
    duration: Annotated[float, Field(ge=4, le=15)] = 6
    aspectRatio: Literal["16:9", "9:16", "4:3", "3:4", "1:1", "21:9", "auto"] = "auto"
    resolution: VideoResolution = "720p"
    audio: bool = True
    negativePrompt: NegativePrompt | None = None
