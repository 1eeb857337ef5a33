"""Request bodies of the video operations (SPEC.md "Videos"); their bounds are core's
(`core/jobs/contract.py`)."""

from __future__ import annotations

from core.jobs.contract import (
    AnimateDuration,
    FramesAspectRatio,
    FramesDuration,
    ImageReference,
    NegativePrompt,
    Prompt,
    VideoResolution,
)
from gateway.contract import RequestModel


class ImageToVideoRequest(RequestModel):
    image: ImageReference
    prompt: Prompt
    duration: AnimateDuration = 6
    resolution: VideoResolution = "720p"
    audio: bool = True
    negativePrompt: NegativePrompt | None = None


class FramesRequest(RequestModel):
    startImage: ImageReference
    endImage: ImageReference
    prompt: Prompt
    duration: FramesDuration = 6
    aspectRatio: FramesAspectRatio = "auto"
    resolution: VideoResolution = "720p"
    audio: bool = True
    negativePrompt: NegativePrompt | None = None
