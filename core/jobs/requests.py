"""What a create asks for: one shape per operation, declared once for every front end. The API
takes it as its request body (its OpenAPI document is generated from these: camelCase on the
wire, unknown fields refused, types strict, SPEC.md's defaults), the dashboard builds it from a
form (`from_fields`, by the Python names), and `core/jobs/creation.JobCreation.admit` makes the
job it asks for. The bounds are the job contract's (`core/jobs/contract.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.jobs.contract import (
    AnimateDuration,
    FramesAspectRatio,
    FramesDuration,
    GenerateAspectRatio,
    ImageReference,
    ImageResolution,
    NegativePrompt,
    PageUrl,
    Prompt,
    Quality,
    References,
    ResizeAspectRatio,
    UUIDString,
    Variations,
    VideoResolution,
)
from core.webhooks.events import JobEventValue


class RequestModel(BaseModel):
    """A request body: snake_case in Python, camelCase on the wire (and only there: the API
    refuses `aspect_ratio` as an unknown field), unknown fields refused (a typo must not pass
    silently), types strict, frozen once made."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        # The titles the document always had, made of the wire's names ("Aspectratio").
        field_title_generator=lambda name, _info: to_camel(name).title(),
    )

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Self:
        """Made in Python, by the fields' own names (the dashboard's forms). Raises pydantic's
        ValidationError."""
        return cls.model_validate(fields, by_name=True, by_alias=False)

    def wire(self) -> dict[str, Any]:
        """As the API receives it: camelCase, defaults filled in."""
        return self.model_dump(mode="json", by_alias=True)


WebhookUrl = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2048,
        description='Where the job\'s events are POSTed (https; see docs/api.md "Webhooks")',
    ),
]
WebhookEvents = Annotated[
    list[JobEventValue],
    Field(
        min_length=1,
        max_length=4,
        description="The events sent; default `completed` and `failed`",
    ),
]


class WebhookRequest(BaseModel):
    """Extension: where to send the job's events, signed the Standard Webhooks way."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    url: WebhookUrl
    events: WebhookEvents | None = None


class JobRequestModel(RequestModel):
    """A create: every one may name a `webhook` (an extension; omitted, nothing changes)."""

    webhook: WebhookRequest | None = None

    def wire(self) -> dict[str, Any]:
        """A `webhook` only when one was named: a create without one hashes (for its
        Idempotency-Key) as it did before webhooks existed."""
        wire = super().wire()
        if self.webhook is None:
            del wire["webhook"]
        return wire


class GenerateRequest(JobRequestModel):
    prompt: Prompt
    aspect_ratio: GenerateAspectRatio = "1:1"
    quality: Quality = "medium"
    resolution: ImageResolution = "1K"
    style_id: UUIDString | None = None
    references: References = Field(default_factory=list)
    variations: Variations = 1


class EditRequest(JobRequestModel):
    image_id: UUIDString
    prompt: Prompt
    style_id: UUIDString | None = None
    references: References = Field(default_factory=list)


# A reframe (outpainting) to another aspect ratio; the API calls it a resize. (Comments, not
# docstrings, on these: a docstring would become a description in the OpenAPI document.)
class ResizeRequest(JobRequestModel):
    image_id: UUIDString
    aspect_ratio: ResizeAspectRatio
    resolution: ImageResolution = "1K"


class UpscaleRequest(JobRequestModel):
    image_id: UUIDString
    resolution: ImageResolution


class ImageToVideoRequest(JobRequestModel):
    image: ImageReference
    prompt: Prompt
    duration: AnimateDuration = 6
    resolution: VideoResolution = "720p"
    audio: bool = True
    negative_prompt: NegativePrompt | None = None


# A transition from a start frame to an end frame.
class FramesRequest(JobRequestModel):
    start_image: ImageReference
    end_image: ImageReference
    prompt: Prompt
    duration: FramesDuration = 6
    aspect_ratio: FramesAspectRatio = "auto"
    resolution: VideoResolution = "720p"
    audio: bool = True
    negative_prompt: NegativePrompt | None = None


# A brand style extracted from a website.
class ExtractRequest(JobRequestModel):
    url: PageUrl


JobRequest = (
    GenerateRequest
    | EditRequest
    | ResizeRequest
    | UpscaleRequest
    | ImageToVideoRequest
    | FramesRequest
    | ExtractRequest
)
