"""A job's progress as the runner divides it: the pipeline's own 0..1 is the first 90 %, storing
its output starts at 95 %."""

from __future__ import annotations

from pipelines.base import JobControl

PIPELINE_SHARE = 0.9
STORING = 0.95


class PipelineProgress:
    """The control a pipeline is handed: it reports its own work as 0..1, which this maps onto
    0..PIPELINE_SHARE of the job's progress (a cancel raises through it as before)."""

    def __init__(self, job: JobControl) -> None:
        self.job = job

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.job.progress(PIPELINE_SHARE * fraction, message)
