"""A job's progress as the runner divides it: the pipeline's own 0..1 is the first 90 %, storing
its output starts at 95 %; and its live previews, handed to the worker's preview publisher."""

from __future__ import annotations

from PIL import Image

from pipelines.base import JobControl
from workers.previews import PreviewPublisher

PIPELINE_SHARE = 0.9
STORING = 0.95


class PipelineProgress:
    """The control a pipeline is handed: it reports its own work as 0..1, which this maps onto
    0..PIPELINE_SHARE of the job's progress (a cancel raises through it as before), and offers
    previews (`pipelines.base.PreviewControl`) of the job `job_id`."""

    def __init__(
        self, job: JobControl, previews: PreviewPublisher | None = None, job_id: str = ""
    ) -> None:
        self.job = job
        self.previews = previews
        self.job_id = job_id

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.job.progress(PIPELINE_SHARE * fraction, message)

    def wants_preview(self) -> bool:
        return self.previews is not None and self.previews.wants(self.job_id)

    def preview(self, image: Image.Image) -> None:
        if self.previews is not None:
            self.previews.offer(self.job_id, image)
