"""Jobs as the dashboard shows them: cards with thumbnails (never the originals in a grid),
video posters, prompt, status, progress, where a job in flight stands, credits and the
pipeline's notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.clock import utcnow
from core.jobs.contract import (
    IN_FLIGHT,
    ImagesResult,
    JobStatus,
    StyleResult,
    VideoResult,
    result_of,
)
from core.jobs.standing import Standing, Standings
from core.services import Services
from core.tables import JobRow
from core.thumbnails import service as thumbnails
from gateway.dashboard.web import PREFIX
from gateway.jobs.presenter import notes_of, progress_of
from gateway.signing import UrlSigner

TYPE_LABELS = {
    "image.generate": "Image",
    "image.edit": "Image edit",
    "video.generate": "Video",
    "style.extract": "Style",
}
OPERATION_LABELS = {
    "generate": "Generate",
    "edit": "Edit",
    "reframe": "Reframe",
    "upscale": "Upscale",
    "animate": "Image to video",
    "transition": "Frames to video",
    "extract_style": "Style extraction",
}


@dataclass(frozen=True)
class ImageView:
    id: str
    thumbnail_url: str
    url: str
    width: int
    height: int


@dataclass(frozen=True)
class VideoView:
    id: str
    url: str
    poster_url: str | None
    width: int
    height: int
    duration_seconds: float


@dataclass
class JobCard:
    id: str
    type: str
    type_label: str
    operation_label: str
    status: str
    progress: float
    prompt: str
    created_at: datetime
    credits: int
    in_flight: bool
    error: str | None = None
    # What the pipeline said of the result (what it drew, what it could not): the API's notes.
    notes: list[str] = field(default_factory=list)
    # Where a job in flight stands, in words ("#2 in queue, starts in about 40 s").
    standing: str = ""
    images: list[ImageView] = field(default_factory=list)
    video: VideoView | None = None
    style_id: str | None = None
    # What the job ran with, to reproduce it ("Reuse this seed").
    seed: int | None = None
    model: str | None = None

    @property
    def percent(self) -> int:
        return round(self.progress * 100)


def standing_text(status: str, standing: Standing | None, now: datetime) -> str:
    """A job in flight's standing in words (the dashboard's script writes the same from its
    event stream): its place in its queue and when it should start, or when it should end."""
    if standing is None:
        return ""
    if status == JobStatus.PENDING and standing.queue_position is not None:
        start = _in_about(standing.estimated_start_at, now)
        return f"#{standing.queue_position} in queue" + (f", starts {start}" if start else "")
    if status == JobStatus.PROCESSING and standing.estimated_completion_at is not None:
        return f"ends {_in_about(standing.estimated_completion_at, now)}"
    return ""


def _in_about(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return ""
    seconds = max(0.0, (moment - now).total_seconds())
    return f"in about {seconds:.0f} s" if seconds < 120 else f"in about {seconds / 60:.0f} min"


def prompt_of(inputs: dict[str, Any]) -> str:
    """What a person asked for: the prompt, or the address of a style extraction."""
    return str(inputs.get("prompt") or inputs.get("url") or "")


class Gallery:
    def __init__(self, services: Services, signer: UrlSigner, standings: Standings) -> None:
        self.services = services
        self.signer = signer
        self.standings = standings

    def thumbnail_urls(self, media_ids: Sequence[str]) -> dict[str, str]:
        """Each image's thumbnail URL: signed where it is made already (one query for all),
        else the address that makes it on its first request."""
        made = thumbnails.stored_keys(self.services, media_ids)
        return {
            media_id: (
                self.signer.url(made[media_id])
                if media_id in made
                else f"{PREFIX}/media/{media_id}/thumbnail"
            )
            for media_id in media_ids
        }

    def cards(self, jobs: Sequence[JobRow], originals: bool = False) -> list[JobCard]:
        """The cards of a page of jobs, with their images' thumbnails; with `originals` also
        the full-size images' URLs (a job's own page: open and download)."""
        results = {
            job.id: result_of(job.type, job.result)
            for job in jobs
            if job.status == JobStatus.COMPLETED and job.result is not None
        }
        image_ids = [
            image.id
            for result in results.values()
            if isinstance(result, ImagesResult)
            for image in result.images
        ]
        thumbnail_urls = self.thumbnail_urls(image_ids)
        now = utcnow()
        cards = []
        for job in jobs:
            card = JobCard(
                id=job.id,
                type=job.type,
                type_label=TYPE_LABELS.get(job.type, job.type),
                operation_label=OPERATION_LABELS.get(job.operation, job.operation),
                status=job.status,
                progress=progress_of(job),
                prompt=prompt_of(job.inputs),
                created_at=job.created_at,
                credits=job.credits_reserved,
                in_flight=job.status in IN_FLIGHT,
                error=(job.error or {}).get("message") if job.status == JobStatus.FAILED else None,
                notes=notes_of(job),
                standing=standing_text(job.status, self.standings.of(job), now),
            )
            result = results.get(job.id)
            if isinstance(result, ImagesResult | VideoResult):
                card.seed = result.seed
            if isinstance(result, ImagesResult):
                card.model = result.model
                card.images = [
                    ImageView(
                        id=image.id,
                        thumbnail_url=thumbnail_urls[image.id],
                        url=self.signer.url(image.key) if originals else "",
                        width=image.width,
                        height=image.height,
                    )
                    for image in result.images
                ]
            elif isinstance(result, VideoResult):
                video = result.video
                card.video = VideoView(
                    id=video.id,
                    url=self.signer.url(video.key),
                    poster_url=self.signer.url(video.thumbnail_key)
                    if video.thumbnail_key
                    else None,
                    width=video.width,
                    height=video.height,
                    duration_seconds=video.duration_seconds,
                )
            elif isinstance(result, StyleResult):
                card.style_id = result.style.id
            cards.append(card)
        return cards
