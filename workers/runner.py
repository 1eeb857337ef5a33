"""Running one job on a worker: claim, execute the pipeline under a lease, store, finish."""

from __future__ import annotations

import hashlib
import io
import logging
import mimetypes
import os
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from PIL import Image

from core.db import DATABASE_UNAVAILABLE
from core.fetch import FetchPolicy, fetch
from core.ids import new_id
from core.images import decode_first_frame
from core.jobs import service as jobs_service
from core.models import Base, Job, Media, Style
from core.services import Services
from core.storage import StorageError
from core.styles import service as styles_service
from models.cache import shared_cache
from pipelines.base import (
    AnimateInput,
    Cancelled,
    EditInput,
    GenerateInput,
    ImageOutput,
    ReframeInput,
    StyleHints,
    TransitionInput,
    UpscaleInput,
    VideoOutput,
)
from pipelines.builtin.mp4 import poster_jpeg
from pipelines.diffusion.common import OutOfDeviceMemory
from pipelines.registry import PipelineRegistry
from pipelines.styles import (
    BrandImage,
    SiteUnavailable,
    describe_image,
    embed_texts,
    extract_style,
    image_shape,
    rank_by_similarity,
)
from workers import metrics
from workers.batching import Batcher
from workers.dispatch import Dispatcher
from workers.queues import QUEUE_OF_OPERATION
from workers.shutdown import InFlight

log = logging.getLogger(__name__)
STORE_ATTEMPTS = 4
# About ten seconds of a database out of reach before a claim gives up.
CLAIM_ATTEMPTS = 8
# The brand images an extraction seeds a style's folder with (logo, hero, social image).
MAX_BRAND_IMAGES = 3
MAX_BRAND_BYTES = 12 * 1024 * 1024
ASSET_SEMANTICS = styles_service.AssetSemantics(describe_image, embed_texts, rank_by_similarity)


class ClaimLost(Exception):
    """The job was cancelled or handed to another worker while this one ran it."""


class InputUnavailable(Exception):
    """An input image the job names could not be read from storage."""


@dataclass
class Outcome:
    """What an operation produced: the job's result, its stored media, a note for the job."""

    result: dict[str, Any]
    media: list[Media]
    message: str | None = None
    # Other rows the job makes, saved with its completion (a style extraction's style).
    records: list[Base] = field(default_factory=list)


class LeaseKeeper:
    """Renews the job's lease in the background and notices a cancel or a lost claim.

    The pipeline's `progress` calls only read a flag this thread sets, so checking for cancel at
    every step costs nothing. The thread reads the claim a few times a second (a read, which
    never waits for writers) and writes the lease only every third of its length, so running
    jobs do not crowd the database's write lock.
    """

    def __init__(self, services: Services, claim: jobs_service.Claim) -> None:
        self._services = services
        self._claim = claim
        self._fraction = 0.0
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._check_interval = min(0.25, services.settings.lease_seconds / 4)
        self._renew_interval = services.settings.lease_seconds / 3
        self._thread = threading.Thread(
            target=self._run, name=f"lease-{claim.job.id[:8]}", daemon=True
        )

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        db = self._services.db
        renewed_at = time.monotonic()
        while not self._stop.wait(self._check_interval):
            try:
                if time.monotonic() - renewed_at >= self._renew_interval:
                    alive = jobs_service.renew_lease(
                        db, self._claim, self._services.settings.lease_seconds, self._fraction
                    )
                    renewed_at = time.monotonic()
                else:
                    alive = jobs_service.holds_claim(db, self._claim)
            except Exception as error:  # the database blinked: the lease outlives a blink
                log.warning("could not renew the lease of job %s: %s", self._claim.job.id, error)
                continue
            if not alive:
                self._lost.set()
                return

    def progress(self, fraction: float, message: str | None = None) -> None:
        self._fraction = max(0.0, min(1.0, fraction))
        if self._lost.is_set():
            raise Cancelled()


class JobRunner:
    def __init__(
        self, services: Services, pipelines: PipelineRegistry, dispatcher: Dispatcher
    ) -> None:
        self.services = services
        self.pipelines = pipelines
        # Publishes the next video of an account's line when one of its videos ends.
        self.dispatcher = dispatcher
        # What runs now, for the graceful shutdown to hand back.
        self.in_flight = InFlight()
        # Compatible image jobs running at once share one call of a batching pipeline.
        self.batcher = Batcher(services.config.queues.image.batch_window_ms / 1000)
        self.batcher.listeners.append(metrics.batch_ran)
        metrics.watch_model_cache(shared_cache(pipelines.models))
        self._operations: dict[str, Callable[[Job, LeaseKeeper], Outcome]] = {
            "generate": self._generate,
            "edit": self._edit,
            "reframe": self._reframe,
            "upscale": self._upscale,
            "animate": self._animate,
            "transition": self._transition,
            "extract_style": self._extract_style,
        }

    def warm_up(self, queues: list[str]) -> None:
        """Load the pipelines these queues serve now: a broken one is a start-up error of the
        worker, not a failure of the first job."""
        served = set(self.pipelines.operations())
        for operation in self._operations:
            if QUEUE_OF_OPERATION[operation] in queues and operation in served:
                self.pipelines.get(operation)

    def run(self, job_id: str) -> None:
        claim = self._claim(job_id)
        if claim is None:
            return
        with self.in_flight.track(claim):
            self._run_claimed(claim)

    def _claim(self, job_id: str) -> jobs_service.Claim | None:
        """The claim, tried again while the database is briefly out of reach (a dropped
        connection, a failover): giving up acknowledges the message, and the sweep would only
        republish the job minutes later."""
        delay = 0.2
        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            try:
                return jobs_service.claim(
                    self.services.db, job_id, self.services.settings.lease_seconds
                )
            except DATABASE_UNAVAILABLE as error:
                if attempt == CLAIM_ATTEMPTS:
                    raise
                log.warning("claiming job %s failed (%s); retrying", job_id, type(error).__name__)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        return None

    def _run_claimed(self, claim: jobs_service.Claim) -> None:
        job = claim.job
        self.services.events.publish(job.id)
        started = time.perf_counter()
        stored: list[Media] = []
        try:
            with LeaseKeeper(self.services, claim) as keeper:
                outcome = self._operations[job.operation](job, keeper)
            stored = outcome.media
            if not jobs_service.complete(
                self.services.db, claim, outcome.result, stored, outcome.message, outcome.records
            ):
                raise ClaimLost()
            log.info(
                "job %s %s completed in %.2fs, peak rss %d MiB",
                job.id,
                job.operation,
                time.perf_counter() - started,
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            )
            metrics.job_ended(job.operation, "completed", time.perf_counter() - started)
        except (Cancelled, ClaimLost):
            log.info("job %s was cancelled or taken over; its output is discarded", job.id)
            self._discard(stored)
            metrics.job_ended(job.operation, "abandoned", time.perf_counter() - started)
        except Exception as error:
            log.exception("job %s failed", job.id)
            self._discard(stored)
            jobs_service.fail(self.services.db, claim, _failure_message(error))
            metrics.job_ended(job.operation, "failed", time.perf_counter() - started)
        finally:
            self.services.events.publish(job.id)
            self.dispatcher.job_ended(job)
        if job.queue == "video" and stored:
            self._make_poster(job, stored[0])

    def _generate(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        inputs = job.inputs
        output = self._run_image(
            job,
            GenerateInput(
                prompt=inputs["prompt"],
                width=inputs["width"],
                height=inputs["height"],
                quality=inputs["quality"],
                variations=inputs["variations"],
                seed=job.seed,
                references=self._load_images(inputs["references"]),
                style=_style_hints(inputs.get("style")),
            ),
            keeper,
        )
        return self._stored(job, output, keeper)

    def _edit(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        inputs = job.inputs
        edit_input = EditInput(
            prompt=inputs["prompt"],
            source=self._load_images([inputs["source"]])[0],
            seed=job.seed,
            references=self._load_images(inputs["references"]),
            style=_style_hints(inputs.get("style")),
        )
        return self._stored(job, self._run_image(job, edit_input, keeper), keeper)

    def _reframe(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        return self._to_size(job, keeper, ReframeInput)

    def _upscale(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        return self._to_size(job, keeper, UpscaleInput)

    def _to_size(
        self, job: Job, keeper: LeaseKeeper, input_type: type[ReframeInput | UpscaleInput]
    ) -> Outcome:
        """Reframe and upscale: the source image brought to the job's width and height."""
        inputs = job.inputs
        request = input_type(
            source=self._load_images([inputs["source"]])[0],
            width=inputs["width"],
            height=inputs["height"],
            seed=job.seed,
        )
        return self._stored(job, self._run_image(job, request, keeper), keeper)

    def _run_image(self, job: Job, request: Any, keeper: LeaseKeeper) -> ImageOutput:
        return self.batcher.run(self.pipelines.get(job.operation), request, keeper)

    def _animate(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        image = self._load_images([job.inputs["image"]])[0]
        return self._render_video(job, keeper, lambda fields: AnimateInput(image=image, **fields))

    def _transition(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        start, end = self._load_images([job.inputs["startImage"], job.inputs["endImage"]])
        return self._render_video(
            job, keeper, lambda fields: TransitionInput(start=start, end=end, **fields)
        )

    def _render_video(
        self, job: Job, keeper: LeaseKeeper, make_input: Callable[[dict[str, Any]], Any]
    ) -> Outcome:
        """Run a video pipeline into a temporary file (the pipeline streams frames to it) and
        store the clip; `make_input` adds the operation's frames to the fields both share."""
        inputs = job.inputs
        with tempfile.TemporaryDirectory(prefix="sfumato-video-") as folder:
            request = make_input(
                {
                    "prompt": inputs["prompt"],
                    "duration": float(inputs["duration"]),
                    "width": inputs["width"],
                    "height": inputs["height"],
                    "audio": inputs["audio"],
                    "negative_prompt": inputs["negativePrompt"],
                    "seed": job.seed,
                    "output_path": os.path.join(folder, "clip.mp4"),
                }
            )
            output = self.pipelines.get(job.operation).run(request, keeper)
            return self._store_video(job, output, keeper)

    def _store_video(self, job: Job, output: VideoOutput, keeper: LeaseKeeper) -> Outcome:
        keeper.progress(0.95, "storing")
        media_id = new_id()
        key = f"videos/{job.id}/{media_id}.mp4"
        with open(output.path, "rb") as clip:
            data = clip.read()
        media = self._put_media(
            job, "video", key, data, "video/mp4", (output.width, output.height), media_id
        )
        # The poster is made once the video is stored and the job completed, so the first
        # completed read may show thumbnailUrl null (SPEC.md); the worker keeps the clip until then.
        video = {
            "id": media_id,
            "key": key,
            "durationSeconds": output.duration_seconds,
            "width": output.width,
            "height": output.height,
            "thumbnailKey": None,
        }
        return Outcome({"video": video}, [media], "; ".join(output.notes) or None)

    def _make_poster(self, job: Job, video: Media) -> None:
        """The JPEG poster, from the stored clip; retried by nobody if it fails, so it logs."""
        try:
            with tempfile.TemporaryDirectory(prefix="sfumato-poster-") as folder:
                path = os.path.join(folder, "clip.mp4")
                with open(path, "wb") as clip:
                    clip.write(self.services.storage.get_bytes(video.storage_key))
                poster_bytes = poster_jpeg(path)
            poster = self._put_media(
                job,
                "poster",
                f"videos/{job.id}/{video.id}-poster.jpg",
                poster_bytes,
                "image/jpeg",
                (video.width, video.height),
            )
            if jobs_service.attach_poster(self.services.db, job.id, poster):
                self.services.events.publish(job.id)
            else:
                self.services.storage.delete(poster.storage_key)
        except Exception:
            log.exception("could not make the poster of job %s", job.id)

    def _extract_style(self, job: Job, keeper: LeaseKeeper) -> Outcome:
        settings = self.services.settings
        policy = FetchPolicy.from_settings(settings, settings.max_image_bytes)
        keeper.progress(0.1, "reading the site")
        extraction = extract_style(job.inputs["url"], lambda url: fetch(url, policy))
        keeper.progress(0.8, "keeping the brand images")
        style_id = new_id()
        media: list[Media] = []
        try:
            drafts = self._store_brand_images(job, style_id, extraction.brand_images, media)
            assets = styles_service.build_assets(ASSET_SEMANTICS, style_id, job.account_id, drafts)
        except BaseException:
            self._discard(media)
            raise
        # The logo comes first and always fits the budget.
        logo_key = drafts[0].storage_key if extraction.logo is not None else None
        detail = extraction.style
        style = Style(
            id=style_id,
            account_id=job.account_id,
            job_id=job.id,
            name=detail["name"],
            url=detail["url"],
            description=detail["description"],
            tagline=detail["tagline"],
            colours=detail["colours"],
            typography=detail["typography"],
            tone=detail["tone"],
            aesthetic=detail["aesthetic"],
            logo_key=logo_key,
        )
        return Outcome({"style": {"id": style_id}}, media, None, [style, *assets])

    def _store_brand_images(
        self, job: Job, style_id: str, images: list[BrandImage], media: list[Media]
    ) -> list[styles_service.AssetDraft]:
        """Re-host the site's brand images (logo first) as the style's seed assets, adding their
        rows to `media` as they are stored: the same bytes once, at most MAX_BRAND_IMAGES and
        MAX_BRAND_BYTES in all."""
        drafts: list[styles_service.AssetDraft] = []
        seen: set[str] = set()
        budget = MAX_BRAND_BYTES
        for image in images[:MAX_BRAND_IMAGES]:
            digest = hashlib.sha256(image.body).hexdigest()
            if digest in seen or len(image.body) > budget:
                continue
            seen.add(digest)
            budget -= len(image.body)
            content_type = image.content_type or "application/octet-stream"
            extension = mimetypes.guess_extension(content_type) or ""
            key = f"styles/{style_id}/{image.role}{extension}"
            row = self._put_media(
                job, "brand", key, image.body, content_type, image_shape(image.body)
            )
            media.append(row)
            path_name = os.path.basename(urlsplit(image.url).path) if image.url else ""
            drafts.append(
                styles_service.describe_draft(
                    ASSET_SEMANTICS,
                    media_id=row.id,
                    storage_key=key,
                    name=path_name or f"{image.role}{extension}",
                    alt_text=image.alt_text,
                    surrounding_text=image.surrounding_text,
                    source="brand",
                    body=image.body,
                    content_type=content_type,
                )
            )
        return drafts

    def _stored(self, job: Job, output: ImageOutput, keeper: LeaseKeeper) -> Outcome:
        keeper.progress(0.95, "storing")
        result, media = self._store_images(job, output.images)
        return Outcome(result, media, "; ".join(output.notes) or None)

    def _load_images(self, entries: list[dict[str, Any]]) -> tuple[Image.Image, ...]:
        """Input images from storage, where the gateway put them when it resolved them."""
        images = []
        for entry in entries:
            try:
                data = self.services.storage.get_bytes(entry["key"])
            except StorageError as error:
                raise InputUnavailable(entry["key"]) from error
            images.append(decode_first_frame(data))
        return tuple(images)

    def _store_images(
        self, job: Job, images: list[Image.Image]
    ) -> tuple[dict[str, Any], list[Media]]:
        media: list[Media] = []
        entries = []
        try:
            for image in images:
                media_id = new_id()
                key = f"images/{job.id}/{media_id}.png"
                buffer = io.BytesIO()
                image.save(buffer, format="PNG", compress_level=3)
                media.append(
                    self._put_media(
                        job,
                        "image",
                        key,
                        buffer.getvalue(),
                        "image/png",
                        (image.width, image.height),
                        media_id,
                    )
                )
                entries.append(
                    {"id": media_id, "key": key, "width": image.width, "height": image.height}
                )
        except BaseException:
            self._discard(media)
            raise
        return {"images": entries}, media

    def _put_media(
        self,
        job: Job,
        kind: str,
        key: str,
        data: bytes,
        content_type: str,
        size: tuple[int | None, int | None] | None,
        media_id: str | None = None,
    ) -> Media:
        """Store `data` under `key` (retrying) and return its media row, not yet saved."""
        self._put_with_retry(key, data, content_type)
        return Media(
            id=media_id or new_id(),
            account_id=job.account_id,
            job_id=job.id,
            kind=kind,
            storage_key=key,
            content_type=content_type,
            width=size[0] if size else None,
            height=size[1] if size else None,
            size_bytes=len(data),
        )

    def _put_with_retry(self, key: str, data: bytes, content_type: str) -> None:
        delay = 0.5
        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
                self.services.storage.put_bytes(key, data, content_type)
                return
            except StorageError:
                if attempt == STORE_ATTEMPTS:
                    raise
                log.warning("storing %s failed (attempt %d); retrying", key, attempt)
                time.sleep(delay)
                delay *= 2

    def _discard(self, media: list[Media]) -> None:
        for item in media:
            try:
                self.services.storage.delete(item.storage_key)
            except Exception as error:
                log.warning("could not delete %s: %s", item.storage_key, error)


def _style_hints(stored: dict[str, Any] | None) -> StyleHints | None:
    if not stored:
        return None
    return StyleHints(
        palette=tuple(stored["palette"]), tone=tuple(stored["tone"]), aesthetic=stored["aesthetic"]
    )


def _failure_message(error: Exception) -> str:
    if isinstance(error, SiteUnavailable):
        return f"Could not extract a style: {error}; the credits were refunded"
    if isinstance(error, InputUnavailable):
        return "Could not read an input image; the credits were refunded"
    if isinstance(error, StorageError):
        return "Could not store the result; the credits were refunded"
    if isinstance(error, OutOfDeviceMemory):
        return f"The GPU ran out of memory ({error}); the credits were refunded"
    if isinstance(error, MemoryError):
        return "Ran out of memory; the credits were refunded"
    return "Generation failed; the credits were refunded"
