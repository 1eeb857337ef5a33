"""Publishing jobs to their queues, and the sweep that makes sure none is ever lost.

The database is the source of truth: a job row is committed first and published after (the
transactional outbox). The sweep, at start-up and periodically, publishes what was committed
but never published, republishes what the broker may have lost, and hands out again the jobs
of workers that vanished.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from core.accounts import repository as accounts_repository
from core.broker import TaskPublisher
from core.clock import utcnow
from core.db import DATABASE_UNAVAILABLE
from core.jobs import repository as jobs_repository
from core.jobs import service as jobs_service
from core.jobs.contract import Queue
from core.services import Services
from core.tables import Job

log = logging.getLogger(__name__)
SWEEP_BATCH = 500


class Dispatcher:
    def __init__(self, services: Services, tasks: TaskPublisher) -> None:
        self.services = services
        self.tasks = tasks

    def publish(self, job_id: str, queue: str, expected_dispatched_at: datetime | None) -> bool:
        """Send the job's task; record it unless another dispatcher recorded it first."""
        if not self._send(job_id, queue):
            return False
        with self.services.db.write() as session:
            return jobs_repository.mark_dispatched(
                session, job_id, expected_dispatched_at, utcnow()
            )

    def publish_new(self, job: Job) -> None:
        """Publish a job just created. It is committed already, so a database that fails now
        must not fail its create (a client told "nothing was changed" would create it twice):
        the sweep publishes what this could not record."""
        try:
            if job.queue == Queue.VIDEO:
                self.advance_video_line(job.account_id)
            else:
                self.publish(job.id, job.queue, None)
        except DATABASE_UNAVAILABLE as error:
            log.warning("job %s is created; publishing it is left to the sweep: %s", job.id, error)

    def advance_video_line(self, account_id: str) -> None:
        """Publish the account's oldest waiting video unless one of its videos holds the line.

        One account's videos run one after another in creation order (the video pool is small);
        other accounts' videos pass freely. Called after a video is created, finishes, fails or
        is cancelled, and by the sweep; the account lock makes concurrent calls publish once.
        """
        with self.services.db.write() as session:
            accounts_repository.lock_account(session, account_id)
            if jobs_repository.video_line_held(session, account_id):
                return
            job = jobs_repository.next_in_video_line(session, account_id)
            if job is None:
                return
            # Stamped before sending: the stamp is what holds the line; a send that fails is
            # sent again by the sweep once the stamp is stale.
            job.dispatched_at = utcnow()
            job_id = job.id
        self._send(job_id, Queue.VIDEO)

    def _send(self, job_id: str, queue: str) -> bool:
        try:
            self.tasks.send(job_id, queue)
        except Exception as error:  # the broker is down: the sweep will publish it later
            log.warning("could not publish job %s: %s", job_id, error)
            return False
        return True

    def withdraw(self, job: Job) -> None:
        """After a cancel: drop the queued task early (harmless if it already ran: its claim
        would fail) and let the job's end take effect."""
        try:
            self.tasks.revoke(job.id)
        except Exception as error:
            log.info("could not revoke the task of job %s: %s", job.id, error)
        self.job_ended(job)

    def job_ended(self, job: Job) -> None:
        """A job completed, failed or was cancelled: a video's end lets its account's next
        video go."""
        if job.queue == Queue.VIDEO:
            self.advance_video_line(job.account_id)

    def sweep(self) -> int:
        """One pass; returns how many jobs were published."""
        settings = self.services.settings
        db = self.services.db
        now = utcnow()
        published = 0
        with db.read() as session:
            lapsed = list(jobs_repository.lapsed_leases(session, now, SWEEP_BATCH))
        for job in lapsed:
            if jobs_service.recover_lapsed(db, job, settings.max_attempts):
                log.warning("job %s lost its worker; attempt %d follows", job.id, job.attempts + 1)
                if job.queue != Queue.VIDEO:
                    published += self.publish(job.id, job.queue, None)
            else:
                self.services.events.publish(job.id)
        with db.read() as session:
            fresh = list(
                jobs_repository.undispatched(
                    session, now - timedelta(seconds=settings.dispatch_grace_seconds), SWEEP_BATCH
                )
            )
            stale = list(
                jobs_repository.dispatched_but_unclaimed(
                    session, now - timedelta(seconds=settings.republish_after_seconds), SWEEP_BATCH
                )
            )
        for job in fresh:
            published += self.publish(job.id, job.queue, None)
        for job in stale:
            published += self.publish(job.id, job.queue, job.dispatched_at)
        self._advance_video_lines(now - timedelta(seconds=settings.dispatch_grace_seconds))
        return published

    def _advance_video_lines(self, created_before: datetime) -> None:
        with self.services.db.read() as session:
            waiting = jobs_repository.accounts_with_waiting_videos(session, created_before)
        for account_id in waiting:
            self.advance_video_line(account_id)

    def recover_after_restart(self) -> int:
        """Embedded mode only: this process is the only worker, so whatever was in flight when
        it last stopped is orphaned and its queued messages died with it."""
        with self.services.db.write() as session:
            jobs_repository.orphan_all_in_flight(session, utcnow() - timedelta(seconds=1))
        with self.services.db.read() as session:
            orphans = list(jobs_repository.lapsed_leases(session, utcnow(), 100_000))
        for job in orphans:
            jobs_service.recover_lapsed(self.services.db, job, self.services.settings.max_attempts)
        with self.services.db.read() as session:
            pending = list(jobs_repository.undispatched(session, utcnow(), 100_000))
        published = sum(self.publish(job.id, job.queue, None) for job in pending)
        self._advance_video_lines(utcnow())
        return published
