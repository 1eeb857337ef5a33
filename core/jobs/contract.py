"""What a job is, as every layer names it: its queues, which operation runs on which, and the
bounds of what a create may ask for (SPEC.md), shared by the API's request bodies and the core
requests of `core/jobs/creation.py`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

QUEUES = ("image", "video", "style")

# The image, video and style pools scale independently.
QUEUE_OF_OPERATION = {
    "generate": "image",
    "edit": "image",
    "reframe": "image",
    "upscale": "image",
    "animate": "video",
    "transition": "video",
    "extract_style": "style",
}

Prompt = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
NegativePrompt = Annotated[str, StringConstraints(max_length=1000)]
# An input image: an upload, image or job id, or a URL (SPEC.md "Reference image").
ImageReference = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
# The page a style is extracted from.
PageUrl = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
References = Annotated[list[ImageReference], Field(max_length=4)]
Variations = Annotated[int, Field(ge=1, le=4)]
GenerateAspectRatio = Literal["1:1", "3:2", "2:3", "4:3", "3:4", "4:5", "5:4", "16:9", "9:16"]
ResizeAspectRatio = Literal[
    "1:1", "1:4", "1:8", "2:3", "3:2", "3:4", "4:1", "4:3", "4:5", "5:4", "8:1", "9:16", "16:9",
    "21:9",
]  # fmt: skip
Quality = Literal["low", "medium", "high"]
ImageResolution = Literal["1K", "2K", "4K"]
VideoResolution = Literal["480p", "720p"]
FramesAspectRatio = Literal["16:9", "9:16", "4:3", "3:4", "1:1", "21:9", "auto"]
AnimateDuration = Annotated[float, Field(ge=1, le=15)]
FramesDuration = Annotated[float, Field(ge=4, le=15)]
