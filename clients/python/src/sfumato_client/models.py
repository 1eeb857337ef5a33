"""The API's objects as typed models: snake_case attributes, the wire's camelCase as aliases.

Response models ignore fields they do not know (a newer server keeps older clients working);
request models carry no bounds of their own (the server judges input and answers 400 with
details). tests/client/test_models_match_openapi.py holds them to the served OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

TERMINAL_STATUSES = frozenset({"completed", "failed"})


class APIModel(BaseModel):
    """An object the API answers with."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class RequestBody(BaseModel):
    """A request body: only the fields given are sent, so the server's defaults apply."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# Jobs


class ResultImage(APIModel):
    id: str
    url: str
    width: int
    height: int


class ResultVideo(APIModel):
    id: str
    url: str
    duration_seconds: float
    # A poster made just after the video: may be None on the first completed read.
    thumbnail_url: str | None
    width: int
    height: int


class ResultStyle(APIModel):
    id: str


class JobResult(APIModel):
    images: list[ResultImage] | None = None
    video: ResultVideo | None = None
    style: ResultStyle | None = None
    # Extensions: the seed an image or video job ran with (the same request with it remakes
    # the job), and the model that made the images.
    seed: int | None = None
    model: str | None = None


class JobError(APIModel):
    code: str
    message: str


class JobData(APIModel):
    """A job as the API shows it (`status`: pending, processing, completed, failed)."""

    id: str
    type: str
    status: str
    created_at: str
    # 0..1, never decreasing; None from a server that does not report progress.
    progress: float | None = None
    # A pending job's place in its queue (1 = next to start) and when it should start; a
    # processing job's expected end (ISO 8601). None when not pending (or processing), when the
    # server cannot estimate yet, or from a server that does not say.
    queue_position: int | None = None
    estimated_start_at: str | None = None
    estimated_completion_at: str | None = None
    # While it is processing: a small JPEG of the picture as it forms (a new URL each time it
    # changes); None before the first, once it has ended, and from a server without previews.
    preview_url: str | None = None
    result: JobResult | None = None
    error: JobError | None = None
    # What the pipeline said it did (completed jobs); None from a server that does not say.
    notes: list[str] | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


# Styles


class SolidColour(APIModel):
    type: Literal["solid"]
    name: str
    hex: str
    role: str = ""


class GradientStop(APIModel):
    hex: str
    position_pct: float | None = None


class GradientColour(APIModel):
    type: Literal["gradient"]
    name: str
    gradient_subtype: str
    stops: list[GradientStop]
    angle_deg: float | None = None
    role: str = ""


class TypographyItem(APIModel):
    font_family: str
    weight: str | None = None
    text_transform: str | None = None
    role: str


class Style(APIModel):
    """A saved style in full (`StyleDetail`)."""

    id: str
    name: str
    url: str | None
    description: str | None
    tagline: str | None
    colours: list[Annotated[SolidColour | GradientColour, Field(discriminator="type")]]
    typography: list[TypographyItem]
    tone: list[str]
    aesthetic: str
    logo_url: str | None


class StyleSummary(APIModel):
    id: str
    name: str
    url: str | None
    logo_url: str | None
    palette: list[str]


class SearchHit(APIModel):
    id: str
    name: str
    url: str
    similarity: float


class StyleAsset(APIModel):
    """An image in a style's linked folder (an extension of the API)."""

    id: str
    name: str
    url: str
    source: str
    alt_text: str
    created_at: str


# Uploads and the account


class PresignedUpload(APIModel):
    upload_id: str
    upload_url: str
    expires_in: int


class Upload(APIModel):
    """A completed upload: its id or url is a reference for generations."""

    id: str
    url: str
    content_type: str
    width: int
    height: int


# Models (extension)


class SettingRange(APIModel):
    min: float
    max: float
    # What the model runs at medium quality.
    default: float | None = None


class ServedModel(APIModel):
    """A model the deployment serves for one operation (`GET /v1/models`)."""

    id: str
    operation: str
    kind: str
    default: bool
    licence: str
    steps: SettingRange | None = None
    guidance: SettingRange | None = None
    negative_prompt: bool
    loras: list[str]
    mask: bool


class PlanLimits(APIModel):
    video: bool
    max_inflight_images: int
    max_inflight_videos: int
    # None: no daily cap.
    daily_generation_cap: int | None = None


class Plan(APIModel):
    id: str
    tier: str
    # None from a server that does not report them.
    limits: PlanLimits | None = None


class Account(APIModel):
    user_id: str
    email: str
    plan: Plan
    # The credit balance; None from a server that does not report it.
    credits: int | None = None


# Request bodies


class Webhook(RequestBody):
    """Where a job's events are POSTed, signed with the account's webhook secret
    (`client.webhooks.rotate_account_secret()`); `events` among started, progress, completed,
    failed (the server's default: completed and failed)."""

    url: str
    events: list[str] | None = None


class Adapter(RequestBody):
    """A LoRA adapter installed for the model (`ServedModel.loras`), at `scale` 0..2."""

    name: str
    scale: float | None = None


class GenerateRequest(RequestBody):
    prompt: str
    aspect_ratio: str | None = None
    quality: str | None = None
    resolution: str | None = None
    style_id: str | None = None
    references: list[str] | None = None
    variations: int | None = None
    seed: int | None = None
    negative_prompt: str | None = None
    steps: int | None = None
    guidance: float | None = None
    model: str | None = None
    loras: list[Adapter] | None = None
    webhook: Webhook | None = None


class EditRequest(RequestBody):
    image_id: str
    prompt: str
    style_id: str | None = None
    references: list[str] | None = None
    seed: int | None = None
    negative_prompt: str | None = None
    steps: int | None = None
    guidance: float | None = None
    model: str | None = None
    loras: list[Adapter] | None = None
    mask: str | None = None
    webhook: Webhook | None = None


class ResizeRequest(RequestBody):
    image_id: str
    aspect_ratio: str
    resolution: str | None = None
    seed: int | None = None
    webhook: Webhook | None = None


class UpscaleRequest(RequestBody):
    image_id: str
    resolution: str
    seed: int | None = None
    webhook: Webhook | None = None


class ImageToVideoRequest(RequestBody):
    image: str
    prompt: str
    duration: float | None = None
    resolution: str | None = None
    audio: bool | None = None
    negative_prompt: str | None = None
    seed: int | None = None
    webhook: Webhook | None = None


class FramesRequest(RequestBody):
    start_image: str
    end_image: str
    prompt: str
    duration: float | None = None
    aspect_ratio: str | None = None
    resolution: str | None = None
    audio: bool | None = None
    negative_prompt: str | None = None
    seed: int | None = None
    webhook: Webhook | None = None


class ExtractRequest(RequestBody):
    url: str
    as_new: bool | None = None
    webhook: Webhook | None = None


class SearchRequest(RequestBody):
    query: str
    limit: int | None = None


class LinkAssetsRequest(RequestBody):
    images: list[str]


class PresignRequest(RequestBody):
    filename: str
    content_type: str


# Webhooks


class WebhookEndpoint(APIModel):
    id: str
    url: str
    events: list[str]
    created_at: str
    disabled_at: str | None
    disabled_reason: str | None
    # Only in the answer that made it (or rotated it).
    secret: str | None = None


class WebhookSecret(APIModel):
    secret: str


class WebhookAttempt(APIModel):
    attempted_at: str
    status_code: int | None
    error: str | None
    duration_seconds: float


class WebhookDelivery(APIModel):
    id: str
    event: str
    url: str
    endpoint_id: str | None
    status: str
    created_at: str
    finished_at: str | None
    next_attempt_at: str | None
    attempts: list[WebhookAttempt]


class CreateWebhookRequest(RequestBody):
    url: str
    events: list[str] | None = None
