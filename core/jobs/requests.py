"""What a create asks for: one shape per operation, declared once for every front end. The API
takes it as its request body (its OpenAPI document is generated from these: camelCase on the
wire, unknown fields refused, types strict, SPEC.md's defaults), the dashboard builds it from a
form (`from_fields`, by the Python names), and `core/jobs/creation.JobCreation.admit` makes the
job it asks for. The bounds are the job contract's (`core/jobs/contract.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.jobs.contract import (
    MAX_ADAPTERS,
    AdapterName,
    AdapterScale,
    AnimateDuration,
    FramesAspectRatio,
    FramesDuration,
    GenerateAspectRatio,
    Guidance,
    ImageReference,
    ImageResolution,
    ModelId,
    NegativePrompt,
    PageUrl,
    Prompt,
    Quality,
    References,
    ResizeAspectRatio,
    Seed,
    Steps,
    UUIDString,
    Variations,
    VideoResolution,
    at_default,
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
        """As the API receives it: camelCase, defaults filled in; an extension left at its
        default is left out, so a request without extensions hashes (idempotency) as it
        always did."""
        return self.model_dump(
            mode="json", by_alias=True, exclude=at_default(self, self.EXTENSIONS)
        )

    # The optional fields this service adds to SPEC.md's bodies (see `extension`).
    EXTENSIONS: ClassVar[frozenset[str]] = frozenset()


def extension(description: str, default: Any = None, **bounds: Any) -> Any:
    """An optional field beyond SPEC.md: documented as an extension; absent, nothing changes.
    A request lists its extensions' names in `EXTENSIONS`."""
    return Field(default, description=f"Extension: {description}", **bounds)


class Adapter(RequestModel):
    name: AdapterName
    scale: AdapterScale = 1.0


# Documentation of the steering extensions (issue 33), shared by the creates that take them.
SEED = "the noise seed, 0..4294967295 (random when absent; every result reports it)"
NEGATIVE_PROMPT = "what the picture should not show"
STEPS = "denoising steps, within the model's range (GET /v1/models); default: by quality"
GUIDANCE = "guidance (CFG) scale, within the model's range (GET /v1/models)"
MODEL = "the model (an id from GET /v1/models); default: the operation's default model"
LORAS = "LoRA adapters (at most 4) installed for the model, each with a scale 0..2"
MASK = (
    "the area to repaint: an upload, image or job id, or a URL; white repaints, black keeps; "
    "the image's size"
)
STEERING = frozenset({"seed", "negative_prompt", "steps", "guidance", "model", "loras"})


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


WEBHOOK = "where to send the job's events, signed the Standard Webhooks way (issue 34)"
# The extensions every create takes (issue 34's webhook); each create adds its own to them.
ON_EVERY_CREATE = frozenset({"webhook"})


class JobRequestModel(RequestModel):
    """A create: every one may name a `webhook` (an extension; omitted, nothing changes)."""

    webhook: WebhookRequest | None = extension(WEBHOOK)

    EXTENSIONS = ON_EVERY_CREATE


class GenerateRequest(JobRequestModel):
    prompt: Prompt
    aspect_ratio: GenerateAspectRatio = "1:1"
    quality: Quality = "medium"
    resolution: ImageResolution = "1K"
    style_id: UUIDString | None = None
    references: References = Field(default_factory=list)
    variations: Variations = 1
    seed: Seed | None = extension(SEED)
    negative_prompt: NegativePrompt | None = extension(NEGATIVE_PROMPT)
    steps: Steps | None = extension(STEPS)
    guidance: Guidance | None = extension(GUIDANCE)
    model: ModelId | None = extension(MODEL)
    loras: list[Adapter] = extension(LORAS, [], max_length=MAX_ADAPTERS)

    EXTENSIONS = ON_EVERY_CREATE | STEERING


class EditRequest(JobRequestModel):
    image_id: UUIDString
    prompt: Prompt
    style_id: UUIDString | None = None
    references: References = Field(default_factory=list)
    seed: Seed | None = extension(SEED)
    negative_prompt: NegativePrompt | None = extension(NEGATIVE_PROMPT)
    steps: Steps | None = extension(STEPS)
    guidance: Guidance | None = extension(GUIDANCE)
    model: ModelId | None = extension(MODEL)
    loras: list[Adapter] = extension(LORAS, [], max_length=MAX_ADAPTERS)
    mask: ImageReference | None = extension(MASK)

    EXTENSIONS = ON_EVERY_CREATE | STEERING | {"mask"}


# A reframe (outpainting) to another aspect ratio; the API calls it a resize. (Comments, not
# docstrings, on these: a docstring would become a description in the OpenAPI document.)
class ResizeRequest(JobRequestModel):
    image_id: UUIDString
    aspect_ratio: ResizeAspectRatio
    resolution: ImageResolution = "1K"
    seed: Seed | None = extension(SEED)

    EXTENSIONS = ON_EVERY_CREATE | {"seed"}


class UpscaleRequest(JobRequestModel):
    image_id: UUIDString
    resolution: ImageResolution
    seed: Seed | None = extension(SEED)

    EXTENSIONS = ON_EVERY_CREATE | {"seed"}


class ImageToVideoRequest(JobRequestModel):
    image: ImageReference
    prompt: Prompt
    duration: AnimateDuration = 6
    resolution: VideoResolution = "720p"
    audio: bool = True
    negative_prompt: NegativePrompt | None = None
    seed: Seed | None = extension(SEED)

    EXTENSIONS = ON_EVERY_CREATE | {"seed"}


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
    seed: Seed | None = extension(SEED)

    EXTENSIONS = ON_EVERY_CREATE | {"seed"}


# A brand style extracted from a website.
class ExtractRequest(JobRequestModel):
    url: PageUrl
    as_new: bool = extension(
        "save a second style even where the account already has one of this site (the same "
        "address: scheme, host and path); by default that style is updated in place",
        False,
    )

    EXTENSIONS = ON_EVERY_CREATE | {"as_new"}


JobRequest = (
    GenerateRequest
    | EditRequest
    | ResizeRequest
    | UpscaleRequest
    | ImageToVideoRequest
    | FramesRequest
    | ExtractRequest
)
