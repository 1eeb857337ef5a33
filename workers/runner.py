"""Running one job on a worker, top to bottom: claim it (`claims.py`), produce its output under a
lease (a pipeline run, `operations.py`, then its files stored, `storing.py`; or a style
extraction, `style_extraction.py`), and settle it (`settling.py`)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence

from core.jobs import service as jobs_service
from core.jobs.contract import Operation, Queue
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from core.styles.semantics import AssetSemantics
from core.tables import JobRow, Media
from pipelines.base import Cancelled
from pipelines.registry import PipelineRegistry
from workers import metrics
from workers.batching import Batcher
from workers.claims import ClaimLost, LeaseKeeper, Leases, claim_job
from workers.operations import Operations
from workers.previews import PreviewPublisher
from workers.progress import STORING, PipelineProgress
from workers.settling import Settlement
from workers.shutdown import InFlight, ShuttingDown
from workers.storing import Outcome, OutputStore
from workers.style_extraction import StyleExtraction
from workers.warm_up import count_model_cache_lookups, warm_up


class JobRunner:
    def __init__(
        self,
        services: Services,
        pipelines: PipelineRegistry,
        semantics: AssetSemantics,
        lifecycle: JobLifecycle,
    ) -> None:
        self.services = services
        self.pipelines = pipelines
        self.lifecycle = lifecycle
        # What runs now, for the graceful shutdown to hand back.
        self.in_flight = InFlight()
        # Compatible image jobs running at once share one call of a batching pipeline.
        batcher = Batcher(services.config.queues.image.batch_window_ms / 1000)
        batcher.listeners.append(metrics.batch_ran)
        self.operations = Operations(services, pipelines, batcher)
        self.store = OutputStore(services, lifecycle)
        self.style_extraction = StyleExtraction(services, pipelines, semantics, self.store)
        self.settlement = Settlement(lifecycle, self.store)
        self.leases = Leases(lifecycle)
        self.previews = PreviewPublisher(lifecycle, services.settings.preview_seconds)
        count_model_cache_lookups(pipelines)

    def warm_up(self, queues: Sequence[str]) -> None:
        warm_up(self.pipelines, queues)

    def close(self) -> None:
        """Release what the runner holds for the process (the browser) as the worker stops."""
        self.style_extraction.close()

    def run(self, job_id: str) -> None:
        """Raises ShuttingDown when this worker no longer takes jobs (its delivery goes back)."""
        if self.in_flight.closed.is_set():
            raise ShuttingDown(job_id)
        with self.in_flight.tracking(lambda: claim_job(self.lifecycle, job_id)) as claim:
            if claim is None:
                return
            if claim.job.attempts > 1:
                # An earlier attempt's worker vanished, perhaps mid-store: nothing will show
                # what it stored.
                self.lifecycle.clear_outputs(claim.job)
            self._run_claimed(claim)

    def _run_claimed(self, claim: jobs_service.Claim) -> None:
        job = claim.job
        started = time.perf_counter()
        stored: list[Media] = []
        if self.previews.enabled:
            self.previews.start(claim)
        try:
            with self.leases.keep(claim) as keeper:
                outcome = self._produce(job, keeper)
            stored = outcome.media
            self.settlement.complete(claim, outcome, started)
        except (Cancelled, ClaimLost):
            self.settlement.abandon(job, stored, started)
            return
        except Exception as error:
            self.settlement.fail(claim, error, stored, started)
            return
        finally:
            self.previews.finish(job)
        if job.queue == Queue.VIDEO:
            self.store.poster(job, stored[0])

    def _produce(self, job: JobRow, keeper: LeaseKeeper) -> Outcome:
        """The job's output, stored (not yet saved to the job)."""
        if job.operation == Operation.EXTRACT_STYLE:
            return self.style_extraction.run(job, keeper)
        control = PipelineProgress(keeper, self.previews, job.id)
        if job.queue != Queue.VIDEO:
            images = self.operations.run_image(job, control)
            keeper.progress(STORING, "storing")
            return self.store.images(job, images, self.operations.model_of(job))
        # A video pipeline writes its clip into a folder of its own (an image one needs none:
        # making and removing it was a tenth of a small image job).
        with tempfile.TemporaryDirectory(prefix="sfumato-job-") as scratch:
            video = self.operations.run_video(job, control, scratch)
            keeper.progress(STORING, "storing")
            return self.store.video(job, video)
