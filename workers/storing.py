"""Storing what a job made: the bytes in storage (retried), a media row per file, and the job's
result naming them; the video's poster, made after the job completes."""

from __future__ import annotations

import io
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image
from sqlalchemy.orm import Session

from core.ids import new_id
from core.jobs.contract import (
    NOTES_SEPARATOR,
    ImagesResult,
    StoredImage,
    StoredResult,
    StoredVideo,
    VideoResult,
    image_folder,
    video_folder,
)
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from core.storage import StorageError
from core.tables import JobRow, Media
from pipelines.base import ImageOutput, VideoOutput
from pipelines.media.mp4 import poster_jpeg

log = logging.getLogger(__name__)
STORE_ATTEMPTS = 4


@dataclass
class Outcome:
    """What an operation produced: the job's result, its stored media, a note for the job."""

    result: StoredResult
    media: list[Media]
    message: str | None = None
    # The job's other writes, in its completion's transaction (a style extraction saves its
    # style), and what follows once that committed (the files that saving retired deleted).
    save: Callable[[Session], None] | None = None
    saved: Callable[[], None] | None = None


class OutputStore:
    def __init__(self, services: Services, lifecycle: JobLifecycle) -> None:
        self.services = services
        self.lifecycle = lifecycle

    def images(self, job: JobRow, output: ImageOutput, model: str | None = None) -> Outcome:
        """PNGs, one media row each; nothing is left behind if one cannot be stored. The result
        says the seed and `model` that made them (so the job can be reproduced)."""
        media: list[Media] = []
        stored: list[StoredImage] = []
        try:
            for image in output.images:
                media_id = new_id()
                key = f"{image_folder(job.id)}{media_id}.png"
                media.append(
                    self.put_media(
                        job,
                        "image",
                        key,
                        _png(image),
                        "image/png",
                        (image.width, image.height),
                        media_id,
                    )
                )
                stored.append(
                    StoredImage(id=media_id, key=key, width=image.width, height=image.height)
                )
        except BaseException:
            self.discard(media)
            raise
        return Outcome(
            ImagesResult(images=stored, seed=job.seed, model=model),
            media,
            NOTES_SEPARATOR.join(output.notes) or None,
        )

    def video(self, job: JobRow, output: VideoOutput) -> Outcome:
        """The MP4; its poster comes after the job completes (`poster`), so the first completed
        read may show thumbnailUrl null (SPEC.md)."""
        media_id = new_id()
        key = f"{video_folder(job.id)}{media_id}.mp4"
        with open(output.path, "rb") as clip:
            data = clip.read()
        media = self.put_media(
            job, "video", key, data, "video/mp4", (output.width, output.height), media_id
        )
        video = StoredVideo(
            id=media_id,
            key=key,
            duration_seconds=output.duration_seconds,
            width=output.width,
            height=output.height,
        )
        return Outcome(
            VideoResult(video=video, seed=job.seed),
            [media],
            NOTES_SEPARATOR.join(output.notes) or None,
        )

    def poster(self, job: JobRow, video: Media) -> None:
        """The JPEG poster, from the stored clip; retried by nobody if it fails, so it logs."""
        try:
            with tempfile.TemporaryDirectory(prefix="sfumato-poster-") as folder:
                path = os.path.join(folder, "clip.mp4")
                with open(path, "wb") as clip:
                    clip.write(self.services.storage.get_bytes(video.storage_key))
                poster_bytes = poster_jpeg(path)
            poster = self.put_media(
                job,
                "poster",
                f"{video_folder(job.id)}{video.id}-poster.jpg",
                poster_bytes,
                "image/jpeg",
                (video.width, video.height),
            )
            if not self.lifecycle.attach_poster(job, poster):
                self.services.storage.delete(poster.storage_key)
        except Exception:
            log.exception("could not make the poster of job %s", job.id)

    def put_media(
        self,
        job: JobRow,
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

    def discard(self, media: list[Media]) -> None:
        """Delete stored files whose job will not show them (cancelled, failed), retried like a
        store: a failed store often means the store is briefly out of reach."""
        for item in media:
            delay = 0.5
            for attempt in range(1, STORE_ATTEMPTS + 1):
                try:
                    self.services.storage.delete(item.storage_key)
                    break
                except Exception as error:
                    if attempt == STORE_ATTEMPTS:
                        log.warning("could not delete %s: %s", item.storage_key, error)
                        break
                    time.sleep(delay)
                    delay *= 2


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=3)
    return buffer.getvalue()
