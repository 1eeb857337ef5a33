"""A job's life, one function per transition: create, claim, complete, fail, cancel, hand back,
and the recovery of a job whose worker vanished. Each commits (through `core/jobs/service.py`,
where the rules, the compare-and-set, the credit movements and the webhook deliveries the change
causes, `core/webhooks/outbox.py`, live) and then says so: the job's
state event, which wakes the long-polls waiting on it (`core/events.py`), and what the change
sets going on the broker (the job's task; the next video of its account's line).

The gateway and the workers move jobs only through here; `core/jobs/sweep.py` finds the jobs
the broker may have lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy.orm import Session

from core.accounts.service import Caller
from core.broker import TaskPublisher
from core.jobs import service as jobs_service
from core.jobs.contract import (
    JobStatus,
    StoredResult,
    image_folder,
    preview_folder,
    video_folder,
)
from core.jobs.dispatch import Dispatcher
from core.services import Services
from core.storage import StorageError
from core.tables import JobRow, Media

log = logging.getLogger(__name__)


class JobLifecycle:
    def __init__(self, services: Services, dispatcher: Dispatcher) -> None:
        self.services = services
        self.dispatcher = dispatcher

    @classmethod
    def for_services(cls, services: Services) -> JobLifecycle:
        """The lifecycle of a process, publishing to its deployment's broker."""
        tasks = TaskPublisher.from_settings(services.settings)
        return cls(services, Dispatcher(services.db, tasks))

    def create(
        self,
        caller: Caller,
        new: jobs_service.NewJob,
        idempotency: jobs_service.IdempotentRequest | None = None,
    ) -> tuple[JobRow, bool]:
        """The pending job with its credits reserved, published; or the job an earlier request
        with this Idempotency-Key made (True: a replay, nothing new). Raises CreateRefused or
        InsufficientCredits."""
        job, replayed = jobs_service.insert_pending(self.services.db, caller, new, idempotency)
        if not replayed:
            self.dispatcher.publish_new(job)
        return job, replayed

    def claim(self, job_id: str, token: str) -> jobs_service.Claim | None:
        """pending -> processing for this worker's delivery `token`, or None when the job is
        not pending. Idempotent per token: the claim this delivery already holds comes back."""
        claim = jobs_service.take_pending(
            self.services.db, job_id, self.services.settings.lease_seconds, token
        )
        if claim is not None:
            self.services.events.publish_started(job_id)
            # The jobs behind it in its queue moved up (their event streams re-read).
            self.services.events.publish_queue_moved(claim.job.queue)
        return claim

    def renew_lease(self, claim: jobs_service.Claim, progress: float) -> bool:
        """Keep the claim alive and record the progress (event streams are told); False when
        the job was cancelled or taken from this worker."""
        renewed = jobs_service.renew_lease(
            self.services.db, claim, self.services.settings.lease_seconds, progress
        )
        if renewed:
            self.services.events.publish_progress(claim.job.id)
        return renewed

    def show_preview(self, claim: jobs_service.Claim, key: str) -> bool:
        """The job's latest live preview, stored at `key`, is announced (event streams are told,
        as for progress); False when the job is no longer this worker's."""
        shown = jobs_service.show_preview(self.services.db, claim, key)
        if shown:
            self.services.events.publish_progress(claim.job.id)
        return shown

    def clear_previews(self, job: JobRow) -> None:
        """Delete the job's live previews once it has ended (best effort, as outputs)."""
        storage = self.services.storage
        try:
            for key in storage.keys_under(preview_folder(job.id)):
                storage.delete(key)
        except StorageError as error:
            log.warning("could not delete the previews of job %s: %s", job.id, error)

    def holds_claim(self, claim: jobs_service.Claim) -> bool:
        return jobs_service.holds_claim(self.services.db, claim)

    def complete(
        self,
        claim: jobs_service.Claim,
        result: StoredResult,
        media: Sequence[Media],
        message: str | None,
        save: Callable[[Session], None] | None = None,
    ) -> bool:
        """processing -> completed with its media and other writes, the charge settled; False
        when the job stopped being this worker's first."""
        completed = jobs_service.complete(
            self.services.db, claim, result.stored(), media, message, save
        )
        if completed:
            self._ended(claim.job)
        return completed

    def attach_poster(self, job: JobRow, poster: Media) -> bool:
        """A completed video's poster joins its result (made just after it completed)."""
        attached = jobs_service.attach_poster(self.services.db, job.id, poster)
        if attached:
            self.services.events.publish(job.id)
        return attached

    def fail(self, claim: jobs_service.Claim, message: str) -> bool:
        """processing -> failed, refunded in full; False when no longer this worker's."""
        failed = jobs_service.fail(self.services.db, claim, message)
        if failed:
            self._ended(claim.job)
        return failed

    def cancel(self, account_id: str, job_id: str) -> JobRow | None:
        """The account's job after cancelling it (a terminal job is left as it is); None when
        the account has no such job."""
        job, was_in_flight = jobs_service.cancel(self.services.db, account_id, job_id)
        if job is not None and was_in_flight:
            self.services.events.publish(job.id)
            self.services.events.publish_queue_moved(job.queue)
            # A running pipeline stops at its next progress report: its worker's lease keeper
            # hears it (and checks its claim) at once. A pending job's cancel is sent
            # too, unread: telling the two apart would cost a read.
            self.services.events.publish_claim_ended(job.id)
            # Its queued task is dropped early.
            self.dispatcher.withdraw(job)
        return job

    def hand_back(self, claim: jobs_service.Claim) -> bool:
        """processing -> pending from a worker shutting down, published again for another;
        False when the job was no longer this worker's."""
        handed_back = jobs_service.hand_back(self.services.db, claim)
        if handed_back:
            # Said before publishing: the worker's process may be gone a moment later.
            log.warning("job %s handed back for another worker", claim.job.id)
            self.services.events.publish(claim.job.id)
            # The pipeline still running it stops at its next progress report.
            self.services.events.publish_claim_ended(claim.job.id)
            self.dispatcher.publish_new(claim.job)
        return handed_back

    def recover_lapsed(self, job: JobRow) -> bool:
        """A job whose worker vanished (its lease lapsed): back to pending and published again,
        or failed and refunded once it has had its attempts. True when it went back."""
        status = jobs_service.recover_lapsed(
            self.services.db, job, self.services.settings.max_attempts
        )
        if status == JobStatus.PENDING:
            log.warning("job %s lost its worker; attempt %d follows", job.id, job.attempts + 1)
            self.services.events.publish(job.id)
            self.dispatcher.publish_new(job)
            return True
        if status == JobStatus.FAILED:
            self.clear_outputs(job)
            self._ended(job)
        return False

    def clear_outputs(self, job: JobRow) -> None:
        """Delete whatever is stored in the job's output and preview folders: the leftovers of
        attempts whose worker vanished mid-store or mid-run (a new attempt begins, or the job
        failed for good).
        Best effort: a store out of reach leaves them, and says so."""
        storage = self.services.storage
        try:
            for folder in (image_folder(job.id), video_folder(job.id), preview_folder(job.id)):
                for key in storage.keys_under(folder):
                    storage.delete(key)
        except StorageError as error:
            log.warning("could not clear the outputs of job %s: %s", job.id, error)

    def _ended(self, job: JobRow) -> None:
        self.services.events.publish(job.id)
        self.dispatcher.job_ended(job)
