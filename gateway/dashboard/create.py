"""The create forms: generate, edit, reframe, upscale, image-to-video and frames, and the style
extraction of the styles page. Each becomes the same core request the API makes and goes through
`core/jobs/creation.py` (credits, plan, limits); a form carries a one-time token that is its
Idempotency-Key, so a double-clicked submit makes one job. The browser lands on the job."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_args

from fastapi import APIRouter, Query, Response
from pydantic import ValidationError

from core.accounts import authentication
from core.errors import DomainError
from core.jobs import service as jobs_service
from core.jobs.contract import (
    FramesAspectRatio,
    GenerateAspectRatio,
    ImageResolution,
    JobType,
    Quality,
    ResizeAspectRatio,
    VideoResolution,
)
from core.jobs.requests import (
    EditRequest,
    ExtractRequest,
    FramesRequest,
    GenerateRequest,
    ImageToVideoRequest,
    JobRequest,
    ResizeRequest,
    UpscaleRequest,
)
from core.prices import generate_price, image_price, video_price
from core.service_config import Prices
from core.sizes import resolution_of
from core.styles import service as styles_service
from core.uploads import service as uploads_service
from gateway.dashboard.gallery import Gallery, ImageView, JobCard
from gateway.dashboard.jobs import gallery_for
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PostedDep,
    RateLimited,
    form_whole,
    see_other,
    spend,
)
from gateway.errors import validation_details

router = APIRouter(route_class=DashboardRoute)
CHOICES = {
    "generate_ratios": get_args(GenerateAspectRatio),
    "resize_ratios": get_args(ResizeAspectRatio),
    "frames_ratios": get_args(FramesAspectRatio),
    "qualities": get_args(Quality),
    "image_resolutions": get_args(ImageResolution),
    "video_resolutions": get_args(VideoResolution),
}
# The API path whose rate-limit bucket each form spends from (web.spend).
API_PATHS = {
    "generate": "/v1/images/generate",
    "edit": "/v1/images/edit",
    "reframe": "/v1/images/resize",
    "upscale": "/v1/images/upscale",
    "animate": "/v1/videos/image-to-video",
    "frames": "/v1/videos/frames",
    "extract": "/v1/styles/extract",
}
# Form field -> what the form calls it, for messages.
LABELS = {
    "prompt": "Prompt",
    "aspect_ratio": "Aspect ratio",
    "quality": "Quality",
    "resolution": "Resolution",
    "variations": "Variations",
    "references": "References",
    "image_id": "Image",
    "image": "Image",
    "start_image": "First frame",
    "end_image": "Last frame",
    "duration": "Duration",
    "negative_prompt": "Negative prompt",
    "seed": "Seed",
    "steps": "Steps",
    "guidance": "Guidance",
    "model": "Model",
    "loras": "LoRA adapters",
    "mask": "Mask",
    "url": "Website address",
    "styleId": "Style",
    "imageId": "Image",
    "startImage": "First frame",
    "endImage": "Last frame",
}


@dataclass(frozen=True)
class Choice:
    """An image the forms offer: an upload or a generated image, with its thumbnail."""

    id: str
    label: str
    thumbnail_url: str
    generated: bool
    width: int
    height: int


@dataclass(frozen=True)
class FormPrices:
    """A form's price for every choice it offers, from core/prices.py: keyed by the values of
    the form's priced fields joined with "|", for the page to show before the form is sent."""

    fields: tuple[str, ...]
    table: dict[str, int]
    defaults: tuple[str, ...]

    @property
    def json(self) -> str:
        return json.dumps(self.table, separators=(",", ":"))

    def text(self, values: dict[str, Any]) -> str:
        """The price of the form as it is shown (its defaults, or what was sent)."""
        key = "|".join(
            str(values.get(name) or default)
            for name, default in zip(self.fields, self.defaults, strict=True)
        )
        price = self.table.get(key)
        return "—" if price is None else f"{price} credit{'' if price == 1 else 's'}"


def _seconds(low: float, high: float) -> list[str]:
    """The durations a video form's field steps through (half seconds), as keys."""
    return [f"{tenths / 10:g}" for tenths in range(int(low * 10), int(high * 10) + 1, 5)]


def form_prices(prices: Prices, generated: list[Choice]) -> dict[str, FormPrices]:
    """Every create form's prices (an edit is priced by the size of the image it edits)."""
    qualities, image_resolutions = CHOICES["qualities"], CHOICES["image_resolutions"]
    video_resolutions = CHOICES["video_resolutions"]
    return {
        "generate": FormPrices(
            ("quality", "resolution", "variations"),
            {
                f"{quality}|{resolution}|{variations}": generate_price(
                    prices, quality, resolution, variations
                )
                for quality in qualities
                for resolution in image_resolutions
                for variations in range(1, 5)
            },
            ("medium", "1K", "1"),
        ),
        "edit": FormPrices(
            ("image",),
            {
                choice.id: image_price(prices, "edit", resolution_of(choice.width, choice.height))
                for choice in generated
            },
            ("",),
        ),
        "reframe": FormPrices(
            ("resolution",),
            {
                resolution: image_price(prices, "reframe", resolution)
                for resolution in image_resolutions
            },
            ("1K",),
        ),
        "upscale": FormPrices(
            ("resolution",),
            {
                resolution: image_price(prices, "upscale", resolution)
                for resolution in image_resolutions
            },
            ("2K",),
        ),
        "animate": FormPrices(
            ("resolution", "duration"),
            {
                f"{resolution}|{seconds}": video_price(
                    prices, "animate", resolution, float(seconds)
                )
                for resolution in video_resolutions
                for seconds in _seconds(1, 15)
            },
            ("720p", "6"),
        ),
        "frames": FormPrices(
            ("resolution", "duration"),
            {
                f"{resolution}|{seconds}": video_price(
                    prices, "transition", resolution, float(seconds)
                )
                for resolution in video_resolutions
                for seconds in _seconds(4, 15)
            },
            ("720p", "6"),
        ),
    }


def _generated_label(card: JobCard, image: ImageView) -> str:
    """A generated image by its prompt; one made without a prompt (a reframe, an upscale) by
    its size and when it was made."""
    if card.prompt:
        return f"{card.operation_label}: {card.prompt[:60]}"
    return (
        f"{card.operation_label} {image.width}\u00d7{image.height}, "
        f"{card.created_at:%Y-%m-%d %H:%M}"
    )


def image_choices(page: Page, gallery: Gallery) -> list[Choice]:
    account_id = page.user.account_id
    jobs, _ = jobs_service.list_page(
        page.services.db,
        account_id,
        (JobType.IMAGE_GENERATE, JobType.IMAGE_EDIT),
        "completed",
        None,
        24,
    )
    choices = [
        Choice(
            image.id,
            _generated_label(card, image),
            image.thumbnail_url,
            True,
            image.width,
            image.height,
        )
        for card in gallery.cards(jobs)
        for image in card.images
    ]
    uploads, _ = uploads_service.list_page(page.services, account_id, None, 24)
    media_ids = [media.id for media in uploads]
    thumbnail_urls = gallery.thumbnail_urls(media_ids)
    # By file name: uploads sent together (two frames of a video) differ by nothing else.
    names = uploads_service.filenames(page.services, media_ids)
    choices += [
        Choice(
            media.id,
            f"Upload {names.get(media.id, '')} ({media.width}\u00d7{media.height}), "
            f"{media.created_at:%Y-%m-%d %H:%M}",
            thumbnail_urls[media.id],
            False,
            media.width or 0,
            media.height or 0,
        )
        for media in uploads
    ]
    return choices


def create_page(page: Page, status: int = 200, **context: Any) -> Response:
    styles, _ = styles_service.list_page(page.services.db, page.user.account_id, None, 50)
    choices = image_choices(page, gallery_for(page))
    generated = [choice for choice in choices if choice.generated]
    served = page.runtime.creation.served
    return page.render(
        "create.html",
        status,
        nav="create",
        styles=styles,
        choices=choices,
        generated=generated,
        prices=form_prices(page.services.config.prices, generated),
        form_token=secrets.token_urlsafe(24),
        values=context.pop("values", {}),
        # The Advanced part's model choices: the same list as GET /v1/models.
        models={operation: served.for_operation(operation) for operation in ("generate", "edit")},
        **CHOICES,
        **context,
    )


@router.get("/create")
def create_form(
    page: PageDep,
    image: Annotated[str, Query(max_length=64)] = "",
    seed: Annotated[str, Query(max_length=10, pattern=r"^[0-9]*$")] = "",
) -> Response:
    """`seed` (a result's "Reuse this seed") fills the Advanced seed of the image forms."""
    return create_page(page, values={"image": image, "seed": seed})


def _optional(value: str) -> str | None:
    return value or None


def _number(value: str, default: float) -> float:
    if not value:
        return default
    try:
        return float(value) if value.isascii() else float("nan")
    except ValueError:
        return float("nan")  # refused by the request's bounds, with its message


def _whole(value: str, default: int) -> int:
    """Not a number, or one too long to be one: 0, which the request's bounds refuse with
    their message."""
    if not value:
        return default
    number = form_whole(value)
    return 0 if number is None else number


def _optional_whole(value: str) -> int | str | None:
    """A whole number, or None when left empty; anything else is passed on for the request to
    refuse with its own message."""
    value = value.strip()
    if not value:
        return None
    return int(value) if value.isdigit() else value


def _optional_number(value: str) -> float | None:
    return _number(value.strip(), 0.0) if value.strip() else None


def _adapters(value: str) -> list[dict[str, Any]]:
    """ "name:scale, name" (scale 1 when left out) as the request's `loras`."""
    adapters = []
    for part in value.split(","):
        name, _, scale = part.strip().partition(":")
        if name:
            adapters.append({"name": name, "scale": _number(scale.strip(), 1.0)})
    return adapters


def _steering(page: Page) -> dict[str, Any]:
    """The Advanced part of the generate and edit forms, as the requests' fields."""
    return {
        "seed": _optional_whole(page.field("seed")),
        "negative_prompt": _optional(page.field("negative_prompt")),
        "model": _optional(page.field("model")),
        "steps": _optional_whole(page.field("steps")),
        "guidance": _optional_number(page.field("guidance")),
        "loras": _adapters(page.field("loras")),
    }


REQUESTS: dict[str, Callable[[Page], JobRequest]] = {
    "generate": lambda page: GenerateRequest.from_fields(
        {
            "prompt": page.field("prompt"),
            "aspect_ratio": page.field("aspect_ratio", "1:1"),
            "quality": page.field("quality", "medium"),
            "resolution": page.field("resolution", "1K"),
            "variations": _whole(page.field("variations"), 1),
            "style_id": _optional(page.field("style_id")),
            "references": page.fields("references"),
            **_steering(page),
        }
    ),
    "edit": lambda page: EditRequest.from_fields(
        {
            "image_id": page.field("image"),
            "prompt": page.field("prompt"),
            "style_id": _optional(page.field("style_id")),
            "references": page.fields("references"),
            "mask": _optional(page.field("mask")),
            **_steering(page),
        }
    ),
    "reframe": lambda page: ResizeRequest.from_fields(
        {
            "image_id": page.field("image"),
            "aspect_ratio": page.field("aspect_ratio", "16:9"),
            "resolution": page.field("resolution", "1K"),
        }
    ),
    "upscale": lambda page: UpscaleRequest.from_fields(
        {"image_id": page.field("image"), "resolution": page.field("resolution", "2K")}
    ),
    "animate": lambda page: ImageToVideoRequest.from_fields(
        {
            "image": page.field("image"),
            "prompt": page.field("prompt"),
            "duration": _number(page.field("duration"), 6),
            "resolution": page.field("resolution", "720p"),
            "audio": page.field("audio") == "on",
            "negative_prompt": _optional(page.field("negative_prompt")),
        }
    ),
    "frames": lambda page: FramesRequest.from_fields(
        {
            "start_image": page.field("start_image"),
            "end_image": page.field("end_image"),
            "prompt": page.field("prompt"),
            "duration": _number(page.field("duration"), 6),
            "aspect_ratio": page.field("aspect_ratio", "auto"),
            "resolution": page.field("resolution", "720p"),
            "audio": page.field("audio") == "on",
            "negative_prompt": _optional(page.field("negative_prompt")),
        }
    ),
    "extract": lambda page: ExtractRequest.from_fields(
        {"url": page.field("url"), "as_new": page.field("as_new") == "on"}
    ),
}


# Each form's image fields (the form's own names): a select that says which image to use.
IMAGE_FIELDS = {
    "edit": ("image",),
    "reframe": ("image",),
    "upscale": ("image",),
    "animate": ("image",),
    "frames": ("start_image", "end_image"),
}


class FormRefused(Exception):
    """A create the form must show again, with why."""

    def __init__(self, message: str, details: dict[str, str], status: int) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.status = status


def _described(details: dict[str, str]) -> dict[str, str]:
    return {LABELS.get(field.split("[")[0], field): reason for field, reason in details.items()}


def create_job(page: Page, form: str) -> str:
    """Create the job the posted form asks for; its id. Raises FormRefused."""
    details: dict[str, str] = {}
    request: JobRequest | None = None
    try:
        request = REQUESTS[form](page)
    except ValidationError as error:
        details = _described(validation_details(list(error.errors())))
    # An image not chosen, said as the form would (the request's own reason names an id).
    details |= {
        LABELS[name]: "choose an image"
        for name in IMAGE_FIELDS.get(form, ())
        if not page.field(name)
    }
    if details or request is None:
        raise FormRefused("Please correct the form.", details, 400)
    runtime = page.runtime
    caller = authentication.dashboard_caller(page.services.db, page.user.account_id)
    try:
        spend(page, "POST", API_PATHS[form], caller)
    except RateLimited as limited:
        raise FormRefused(str(limited), {}, 429) from None
    token = page.field("form_token")
    idempotency = (
        jobs_service.IdempotentRequest.of(
            f"dashboard:{token}"[:255], f"{PREFIX}/create/{form}", request
        )
        if token
        else None
    )
    try:
        created = runtime.creation.admit(caller, request, idempotency)
    except DomainError as error:
        raise FormRefused(error.message, _described(error.details or {}), error.status) from None
    if not created.replayed:
        runtime.metrics.job_created(created.job.type)
    return created.job.id


@router.post("/create/{form}")
def create(page: PostedDep, form: str) -> Response:
    if form not in REQUESTS or form == "extract":
        return create_page(page, 404, message="There is no such form.")
    try:
        job_id = create_job(page, form)
    except FormRefused as refused:
        values = {key: page.field(key) for key in page.form or {}} | {
            "references": page.fields("references")
        }
        return create_page(
            page,
            refused.status,
            message=refused.message,
            details=refused.details,
            failed_form=form,
            values=values,
        )
    return see_other(f"{PREFIX}/jobs/{job_id}")
