"""Live previews of the jobs a worker runs: a pipeline offers a small picture of its work every
few steps, and one thread of the worker stores it beside the job (`previews/<job>/<n>.jpg`) and
announces it (`JobLifecycle.show_preview`: the job read's `previewUrl`, an event on its stream).

Previews are dropped, never queued: a job has at most one waiting to be written, a newer one
replaces it, and a job is asked for one (`wants`) only when the interval has passed and its last
one is written, so a slow store costs the denoising loop nothing but fewer previews. When the job
ends its previews are deleted (`finish`).
"""

from __future__ import annotations

import io
import logging
import threading
import time
from dataclasses import dataclass

from PIL import Image

from core.jobs import service as jobs_service
from core.jobs.contract import preview_folder
from core.jobs.lifecycle import JobLifecycle
from core.storage import StorageError
from core.tables import JobRow

log = logging.getLogger(__name__)

# The longest side of a stored preview, and its JPEG quality (a few KB each).
PREVIEW_SIDE = 256
JPEG_QUALITY = 70


@dataclass
class _JobPreviews:
    claim: jobs_service.Claim
    offered_at: float = float("-inf")
    written: int = 0  # previews stored so far (the next one's number is this)
    waiting: Image.Image | None = None
    writing: bool = False
    ended: bool = False


def preview_jpeg(image: Image.Image) -> bytes:
    """The picture as a JPEG whose longest side is at most PREVIEW_SIDE."""
    image = image.convert("RGB")
    if max(image.size) > PREVIEW_SIDE:
        image.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE), Image.Resampling.BILINEAR)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


class PreviewPublisher:
    """Stores and announces the previews of every job this worker runs (see the module)."""

    def __init__(self, lifecycle: JobLifecycle, interval_seconds: float) -> None:
        self.lifecycle = lifecycle
        self.interval_seconds = interval_seconds
        # Previews replaced before they were written, and previews stored (benchmarks, tests).
        self.dropped = 0
        self.stored = 0
        self._jobs: dict[str, _JobPreviews] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.interval_seconds > 0

    def start(self, claim: jobs_service.Claim) -> None:
        with self._changed:
            self._jobs[claim.job.id] = _JobPreviews(claim)

    def wants(self, job_id: str) -> bool:
        """Whether a preview of this job would be shown now: cheap, asked at every step."""
        job = self._jobs.get(job_id)
        return (
            job is not None
            and not job.writing
            and job.waiting is None
            and time.monotonic() - job.offered_at >= self.interval_seconds
        )

    def offer(self, job_id: str, image: Image.Image) -> None:
        with self._changed:
            job = self._jobs.get(job_id)
            if job is None or job.ended:
                return
            if job.waiting is not None:
                self.dropped += 1
            job.waiting = image
            job.offered_at = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="previews", daemon=True)
                self._thread.start()
            self._changed.notify()

    def finish(self, job: JobRow) -> None:
        """The job ended: nothing more of it is written, and what was is deleted."""
        with self._changed:
            previews = self._jobs.pop(job.id, None)
            if previews is None:
                return
            previews.ended = True
            previews.waiting = None
            while previews.writing:  # its store in progress is finished before the deletion
                self._changed.wait()
        if previews.written:
            self.lifecycle.clear_previews(job)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not (ready := [j for j in self._jobs.values() if j.waiting is not None]):
                    self._changed.wait()
                job = ready[0]
                image, job.waiting, job.writing = job.waiting, None, True
            try:
                assert image is not None
                self._write(job, image)
            except Exception as error:  # a preview is never worth failing a job for
                log.warning("a preview of job %s was not stored: %s", job.claim.job.id, error)
            finally:
                with self._changed:
                    job.writing = False
                    self._changed.notify_all()

    def _write(self, job: _JobPreviews, image: Image.Image) -> None:
        storage = self.lifecycle.services.storage
        key = f"{preview_folder(job.claim.job.id)}{job.written}.jpg"
        storage.put_bytes(key, preview_jpeg(image), "image/jpeg")
        self.stored += 1
        previous = f"{preview_folder(job.claim.job.id)}{job.written - 1}.jpg"
        job.written += 1
        if not self.lifecycle.show_preview(job.claim, key):
            return  # ended meanwhile: `finish` deletes it
        if job.written > 1:
            try:
                storage.delete(previous)
            except StorageError as error:
                log.warning("an old preview of job %s stays: %s", job.claim.job.id, error)
