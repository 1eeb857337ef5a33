"""A job row as the API shows it: its result's storage keys become absolute, signed URLs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from core.clock import isoformat_ms
from core.jobs.contract import (
    NOTES_SEPARATOR,
    TERMINAL,
    ImagesResult,
    JobStatus,
    StoredResult,
    VideoResult,
    result_of,
)
from core.jobs.standing import Standing
from gateway.responses import render_json
from gateway.signing import UrlSigner


class JobLike(Protocol):
    """What the presenter reads: a Job row, or a lighter row with the same column names."""

    id: str
    type: str
    status: str
    created_at: datetime
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    progress: float
    message: str | None
    preview_key: str | None


def progress_of(job: JobLike) -> float:
    """The extension `progress`: 0..1 in thousandths, 1 once completed, the last value reached
    otherwise (the stored value never decreases)."""
    if job.status == JobStatus.COMPLETED:
        return 1.0
    return round(min(1.0, max(0.0, job.progress)), 3)


def preview_of(job: JobLike) -> str | None:
    """The storage key of the job's latest live preview: only while it is processing (the
    previews are deleted when it ends)."""
    return job.preview_key if job.status == JobStatus.PROCESSING else None


def notes_of(job: JobLike) -> list[str]:
    """A completed job's notes (stored one a line in `message`, see core/jobs/contract.py)."""
    if job.status != JobStatus.COMPLETED or not job.message:
        return []
    return job.message.split(NOTES_SEPARATOR)


def add_standing(view: dict[str, Any], job: JobLike, standing: Standing) -> None:
    """The extensions `queuePosition` and `estimatedStartAt` on a pending job,
    `estimatedCompletionAt` on a processing one (null when it cannot be known)."""
    if job.status == JobStatus.PENDING and standing.queue_position is not None:
        view["queuePosition"] = standing.queue_position
        view["estimatedStartAt"] = _moment(standing.estimated_start_at)
    elif job.status == JobStatus.PROCESSING:
        view["estimatedCompletionAt"] = _moment(standing.estimated_completion_at)


def _moment(moment: datetime | None) -> str | None:
    return isoformat_ms(moment) if moment is not None else None


class JobPresenter:
    def __init__(self, signer: UrlSigner) -> None:
        self.signer = signer

    def created(self, job: JobLike) -> dict[str, Any]:
        """What a create answers: id, type, status and createdAt only."""
        return {
            "id": job.id,
            "type": job.type,
            "status": job.status,
            "createdAt": isoformat_ms(job.created_at),
        }

    def job(self, job: JobLike, standing: Standing | None = None) -> dict[str, Any]:
        """The job as every read shows it; `standing` adds where a job in flight stands."""
        view = self.created(job)
        view["progress"] = progress_of(job)
        if standing is not None:
            add_standing(view, job, standing)
        preview = preview_of(job)
        if preview is not None:
            view["previewUrl"] = self.signer.url(preview)
        if job.status == JobStatus.COMPLETED and job.result is not None:
            view["result"] = self._result(result_of(job.type, job.result))
        if job.status == JobStatus.FAILED and job.error is not None:
            view["error"] = {"code": "GENERATION_FAILED", "message": job.error["message"]}
        view["notes"] = notes_of(job)
        return view

    def _result(self, result: StoredResult) -> dict[str, Any]:
        if isinstance(result, ImagesResult):
            images: dict[str, Any] = {
                "images": [
                    {
                        "id": image.id,
                        "url": self.signer.url(image.key),
                        "width": image.width,
                        "height": image.height,
                    }
                    for image in result.images
                ]
            }
            # Results stored before seeds were reported have none.
            if result.seed is not None:
                images["seed"] = result.seed
            if result.model is not None:
                images["model"] = result.model
            return images
        if isinstance(result, VideoResult):
            video = result.video
            poster = video.thumbnail_key
            clip: dict[str, Any] = {
                "video": {
                    "id": video.id,
                    "url": self.signer.url(video.key),
                    "durationSeconds": video.duration_seconds,
                    "thumbnailUrl": self.signer.url(poster) if poster else None,
                    "width": video.width,
                    "height": video.height,
                }
            }
            if result.seed is not None:
                clip["seed"] = result.seed
            return clip
        return {"style": {"id": result.style.id}}


class JobAnswers:
    """The body of a job read's answer (`{"data": job}`). A finished job's is kept per job and
    files address: clients poll a job until they see it finished, and often after, and its
    body stays the same while its row, its address and its URLs' validity (the signing hour and
    credentials, `UrlSigner.validity`) do; a body is kept only with those and given again only
    when all three are equal. Presenting and rendering were a sixth of a read's CPU."""

    KEPT = 4096

    def __init__(self) -> None:
        self._bodies: dict[tuple[str, str], tuple[JobLike, object, bytes]] = {}

    def body(self, job: JobLike, signer: UrlSigner, standing: Standing | None = None) -> bytes:
        if job.status not in TERMINAL:
            return render_json({"data": JobPresenter(signer).job(job, standing)})
        place = (job.id, signer.base_url)
        validity = signer.validity()
        kept = self._bodies.get(place)
        if kept is not None and kept[1] == validity and kept[0] == job:
            return kept[2]
        body = render_json({"data": JobPresenter(signer).job(job)})
        if len(self._bodies) >= self.KEPT:
            self._bodies.clear()  # as any client can ask for its jobs from any address
        self._bodies[place] = (job, validity, body)
        return body
