"""Admitting a request as a job, the one way every front end does it (the API, the dashboard): a
request per operation (`core/jobs/requests.py`) is resolved (the images and style it names),
sized, priced, and created within the account's plan and credits, with its idempotency record
(`JobLifecycle.create`, which publishes it).

The result is a `CreatedJob`; refusals are `core.errors.DomainError`s (`InvalidInput` naming the
fields that did not resolve, `InsufficientCredits`, `CreateRefused`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from core.accounts.service import Caller
from core.errors import InvalidInput
from core.fetch import FetchPolicy, refusal_without_lookup
from core.jobs import service as jobs_service
from core.jobs.contract import (
    JOB_TYPE_OF_OPERATION,
    QUEUE_OF_OPERATION,
    AnimateJobInputs,
    AppliedAdapter,
    EditJobInputs,
    ExtractStyleJobInputs,
    GenerateJobInputs,
    InputImage,
    JobInputs,
    LentStyle,
    ReframeJobInputs,
    TransitionJobInputs,
    UpscaleJobInputs,
)
from core.jobs.lifecycle import JobLifecycle
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
from core.prices import price_of
from core.references.service import (
    SourceImage,
    UnresolvedReferences,
    resolve_references,
    resolve_source_image,
)
from core.served_models import ServedModels, Steering
from core.services import Services
from core.sizes import image_size, image_size_for_ratio, parse_ratio, resolution_of, video_size
from core.styles import service as styles_service
from core.tables import JobRow
from core.webhooks import service as webhooks_service


@dataclass(frozen=True)
class CreatedJob:
    job: JobRow
    # True when an earlier request with the same Idempotency-Key made the job (nothing charged).
    replayed: bool


@dataclass(frozen=True)
class _Planned:
    inputs: JobInputs
    # Edit, resize and upscale record the job that made their source, so the chain of edits
    # can be replayed.
    parent_job_id: str | None = None
    # The seed the create asked for; None: the job draws one.
    seed: int | None = None


class JobCreation:
    def __init__(
        self, services: Services, lifecycle: JobLifecycle, served: ServedModels | None = None
    ) -> None:
        self.services = services
        self.lifecycle = lifecycle
        # The models creates may pick and steer (issue 33); none known: every operation's
        # default, unsteered.
        self.served = served or ServedModels()
        self._plans: dict[type[JobRequest], Callable[[Caller, Any], _Planned]] = {
            GenerateRequest: self._generate,
            EditRequest: self._edit,
            ResizeRequest: self._reframe,
            UpscaleRequest: self._upscale,
            ImageToVideoRequest: self._animate,
            FramesRequest: self._transition,
            ExtractRequest: self._extract_style,
        }

    def admit(
        self,
        caller: Caller,
        request: JobRequest,
        idempotency: jobs_service.IdempotentRequest | None = None,
    ) -> CreatedJob:
        """Create the job `request` asks for (reserving credits, within the plan) and publish
        it; or replay an earlier create made with the same Idempotency-Key. A `webhook` is
        checked first: one the deliverer would refuse is refused here, nothing charged."""
        webhook = None
        if request.webhook is not None:
            webhook = webhooks_service.job_webhook(
                self.services.db,
                self.services.settings,
                caller.account_id,
                request.webhook.url,
                request.webhook.events,
            )
        planned = self._plans[type(request)](caller, request)
        operation = planned.inputs.operation
        new = jobs_service.NewJob(
            type=JOB_TYPE_OF_OPERATION[operation],
            operation=operation,
            queue=QUEUE_OF_OPERATION[operation],
            inputs=planned.inputs.stored(),
            price=price_of(self.services.config.prices, planned.inputs),
            parent_job_id=planned.parent_job_id,
            webhook=webhook,
            seed=planned.seed,
        )
        job, replayed = self.lifecycle.create(caller, new, idempotency)
        return CreatedJob(job, replayed)

    def _steered(self, operation: str, request: GenerateRequest | EditRequest) -> None:
        """Refuses steering the chosen model does not take (only when the create steers)."""
        steering = Steering(
            model=request.model,
            steps=request.steps,
            guidance=request.guidance,
            loras=[adapter.name for adapter in request.loras],
            mask=isinstance(request, EditRequest) and request.mask is not None,
        )
        if steering != Steering():
            self.served.check(operation, steering)

    def _generate(self, caller: Caller, request: GenerateRequest) -> _Planned:
        self._steered("generate", request)
        style, references = self._lent(caller, request.style_id, request.references)
        width, height = image_size(request.aspect_ratio, request.resolution)
        return _Planned(
            GenerateJobInputs(
                prompt=request.prompt,
                aspect_ratio=request.aspect_ratio,
                quality=request.quality,
                resolution=request.resolution,
                variations=request.variations,
                width=width,
                height=height,
                style_id=request.style_id,
                style=style,
                references=references,
                **_steering_inputs(request),
            ),
            seed=request.seed,
        )

    def _lent(
        self, caller: Caller, style_id: str | None, reference_values: list[str]
    ) -> tuple[LentStyle | None, list[InputImage]]:
        """What the caller's style and reference images lend a generate or an edit: the style's
        hints and the resolved references. Everything that cannot be resolved is named in one
        refusal (`styleId`, `references[i]`)."""
        unresolved: dict[str, str] = {}
        style = None
        if style_id is not None:
            saved = styles_service.get_owned(self.services.db, caller.account_id, style_id)
            if saved is None:
                unresolved["styleId"] = "style not found"
            else:
                style = styles_service.generation_hints(saved)
        references: dict[str, InputImage] = {}
        try:
            references = resolve_references(
                self.services,
                caller.account_id,
                {f"references[{index}]": value for index, value in enumerate(reference_values)},
            )
        except UnresolvedReferences as error:
            unresolved.update(error.details)
        if unresolved:
            raise UnresolvedReferences(unresolved, "A referenced resource could not be resolved")
        return style, list(references.values())

    def _source(self, caller: Caller, image_id: str) -> SourceImage:
        try:
            return resolve_source_image(self.services, caller.account_id, image_id)
        except UnresolvedReferences as error:
            raise UnresolvedReferences(
                error.details, "The image to work on could not be resolved"
            ) from None

    def _edit(self, caller: Caller, request: EditRequest) -> _Planned:
        self._steered("edit", request)
        source = self._source(caller, request.image_id)
        style, references = self._lent(caller, request.style_id, request.references)
        width, height = source.image.width, source.image.height
        inputs = EditJobInputs(
            image_id=request.image_id,
            source=source.image,
            prompt=request.prompt,
            width=width,
            height=height,
            resolution=resolution_of(width, height),
            style_id=request.style_id,
            style=style,
            references=references,
            mask=self._mask(caller, request.mask, source.image),
            **_steering_inputs(request),
        )
        return _Planned(inputs, source.job_id, request.seed)

    def _reframe(self, caller: Caller, request: ResizeRequest) -> _Planned:
        source = self._source(caller, request.image_id)
        width, height = image_size(request.aspect_ratio, request.resolution)
        inputs = ReframeJobInputs(
            image_id=request.image_id,
            source=source.image,
            aspect_ratio=request.aspect_ratio,
            resolution=request.resolution,
            width=width,
            height=height,
        )
        return _Planned(inputs, source.job_id, request.seed)

    def _upscale(self, caller: Caller, request: UpscaleRequest) -> _Planned:
        source = self._source(caller, request.image_id)
        width, height = image_size_for_ratio(
            source.image.width, source.image.height, request.resolution
        )
        inputs = UpscaleJobInputs(
            image_id=request.image_id,
            source=source.image,
            resolution=request.resolution,
            width=width,
            height=height,
        )
        return _Planned(inputs, source.job_id, request.seed)

    def _frames(self, caller: Caller, fields: dict[str, str]) -> dict[str, InputImage]:
        try:
            return resolve_references(self.services, caller.account_id, fields)
        except UnresolvedReferences as error:
            raise UnresolvedReferences(error.details, "A frame could not be resolved") from None

    def _animate(self, caller: Caller, request: ImageToVideoRequest) -> _Planned:
        image = self._frames(caller, {"image": request.image})["image"]
        # The clip takes the aspect ratio of its image (CONTRACT.md "Videos").
        width, height = video_size(image.width, image.height, request.resolution)
        return _Planned(
            AnimateJobInputs(
                image=image,
                prompt=request.prompt,
                negative_prompt=request.negative_prompt,
                duration=request.duration,
                resolution=request.resolution,
                audio=request.audio,
                width=width,
                height=height,
            ),
            seed=request.seed,
        )

    def _transition(self, caller: Caller, request: FramesRequest) -> _Planned:
        frames = self._frames(
            caller, {"startImage": request.start_image, "endImage": request.end_image}
        )
        start = frames["startImage"]
        if request.aspect_ratio == "auto":
            ratio: tuple[float, float] = (start.width, start.height)
        else:
            ratio = parse_ratio(request.aspect_ratio)
        width, height = video_size(*ratio, request.resolution)
        return _Planned(
            TransitionJobInputs(
                start_image=start,
                end_image=frames["endImage"],
                prompt=request.prompt,
                negative_prompt=request.negative_prompt,
                duration=request.duration,
                aspect_ratio=request.aspect_ratio,
                resolution=request.resolution,
                audio=request.audio,
                width=width,
                height=height,
            ),
            seed=request.seed,
        )

    def _mask(self, caller: Caller, reference: str | None, source: InputImage) -> InputImage | None:
        """An edit's mask, resolved like a reference; it must have the source's size."""
        if reference is None:
            return None
        try:
            mask = resolve_references(self.services, caller.account_id, {"mask": reference})
        except UnresolvedReferences as error:
            raise UnresolvedReferences(error.details, "The mask could not be resolved") from None
        image = mask["mask"]
        if (image.width, image.height) != (source.width, source.height):
            raise InvalidInput(
                {
                    "mask": f"is {image.width}x{image.height}; it must have the image's size, "
                    f"{source.width}x{source.height}"
                }
            )
        return image

    def _extract_style(self, _caller: Caller, request: ExtractRequest) -> _Planned:
        try:
            parts = urlsplit(request.url)
            web_page = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            web_page = False
        if not web_page:
            raise InvalidInput({"url": "must be an http or https URL"})
        # The extraction's fetcher's own rules, before anything is charged.
        settings = self.services.settings
        policy = FetchPolicy.from_settings(settings, settings.max_image_bytes)
        refused = refusal_without_lookup(request.url, policy)
        if refused is not None:
            raise InvalidInput({"url": f"{refused}: it is never fetched"})
        return _Planned(ExtractStyleJobInputs(url=request.url, as_new=request.as_new))


def _steering_inputs(request: GenerateRequest | EditRequest) -> dict[str, Any]:
    """The steering a generate or an edit stores in its inputs (the seed goes to the row)."""
    return {
        "model": request.model,
        "negative_prompt": request.negative_prompt,
        "steps": request.steps,
        "guidance": request.guidance,
        "loras": [AppliedAdapter(name=a.name, scale=a.scale) for a in request.loras],
    }
