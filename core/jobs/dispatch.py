"""Sending jobs' tasks to the broker: the transactional outbox (a job's row is committed first,
its task sent after, and the sending recorded so it happens once) and the video line (one
account's videos run one after another).

The lifecycle (`core/jobs/lifecycle.py`) and the sweep (`core/jobs/sweep.py`) call it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from core.accounts import repository as accounts_repository
from core.broker import TaskPublisher
from core.clock import utcnow
from core.db import DATABASE_UNAVAILABLE, Database
from core.jobs import repository as jobs_repository
from core.jobs.contract import Queue
from core.tables import JobRow

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(self, db: Database, tasks: TaskPublisher) -> None:
        self.db = db
        self.tasks = tasks

    def publish(self, job_id: str, queue: str, expected_dispatched_at: datetime | None) -> bool:
        """Send the job's task; record it unless another dispatcher recorded it first."""
        if not self._send(job_id, queue):
            return False
        with self.db.write() as session:
            return jobs_repository.mark_dispatched(
                session, job_id, expected_dispatched_at, utcnow()
            )

    def publish_new(self, job: JobRow) -> None:
        """Publish a job just committed as pending (created, handed back, or given up by a lost
        worker); a video waits for its account's line instead. The job is committed already, so
        a database that fails now must not fail its create (a client told "nothing was changed"
        would create it twice): the sweep publishes what this could not record."""
        try:
            if job.queue == Queue.VIDEO:
                self.advance_video_line(job.account_id)
            else:
                self.publish(job.id, job.queue, None)
        except DATABASE_UNAVAILABLE as error:
            log.warning("job %s is pending; publishing it is left to the sweep: %s", job.id, error)

    def job_ended(self, job: JobRow) -> None:
        """A job completed, failed or was cancelled: a video's end lets its account's next
        video go."""
        if job.queue == Queue.VIDEO:
            self.advance_video_line(job.account_id)

    def withdraw(self, job: JobRow) -> None:
        """After a cancel: drop the queued task early (harmless if it already ran: its claim
        would fail) and let the job's end take effect."""
        try:
            self.tasks.revoke(job.id)
        except Exception as error:
            log.info("could not revoke the task of job %s: %s", job.id, error)
        self.job_ended(job)

    def advance_video_line(self, account_id: str) -> None:
        """Publish the account's oldest waiting video unless one of its videos holds the line.

        One account's videos run one after another in creation order (the video pool is small);
        other accounts' videos pass freely. Called after a video is created, finishes, fails or
        is cancelled, and by the sweep; the account lock makes concurrent calls publish once.
        """
        with self.db.write() as session:
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

    def advance_video_lines(self, created_before: datetime) -> None:
        """The line of every account with a video waiting since before `created_before`."""
        with self.db.read() as session:
            waiting = jobs_repository.accounts_with_waiting_videos(session, created_before)
        for account_id in waiting:
            self.advance_video_line(account_id)

    def _send(self, job_id: str, queue: str) -> bool:
        try:
            self.tasks.send(job_id, queue)
        except Exception as error:  # the broker is down: the sweep will publish it later
            log.warning("could not publish job %s: %s", job_id, error)
            return False
        return True
