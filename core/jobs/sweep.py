"""The sweep: the database is the source of truth and the broker only delivers, so a periodic
pass (at gateway start-up and every `SFUMATO_SWEEP_INTERVAL_SECONDS`) selects what the broker may
not have: jobs committed but never published (the outbox), jobs published but unclaimed for too
long (a broker that lost its queue), jobs whose worker vanished (a lapsed lease), and videos
waiting in a line that nothing advanced."""

from __future__ import annotations

import logging
from datetime import timedelta

from core.clock import utcnow
from core.jobs import repository as jobs_repository
from core.jobs.lifecycle import JobLifecycle

log = logging.getLogger(__name__)
SWEEP_BATCH = 500


class JobSweep:
    def __init__(self, lifecycle: JobLifecycle) -> None:
        self.lifecycle = lifecycle
        self.db = lifecycle.services.db
        self.settings = lifecycle.services.settings
        self.dispatcher = lifecycle.dispatcher

    def run(self) -> int:
        """One pass; returns how many jobs were published."""
        now = utcnow()
        grace = now - timedelta(seconds=self.settings.dispatch_grace_seconds)
        with self.db.read() as session:
            lapsed = list(jobs_repository.lapsed_leases(session, now, SWEEP_BATCH))
        published = sum(self.lifecycle.recover_lapsed(job) for job in lapsed)
        with self.db.read() as session:
            fresh = list(jobs_repository.undispatched(session, grace, SWEEP_BATCH))
            stale = list(
                jobs_repository.dispatched_but_unclaimed(
                    session,
                    now - timedelta(seconds=self.settings.republish_after_seconds),
                    SWEEP_BATCH,
                )
            )
        for job in fresh:
            published += self.dispatcher.publish(job.id, job.queue, None)
        for job in stale:
            published += self.dispatcher.publish(job.id, job.queue, job.dispatched_at)
        self.dispatcher.advance_video_lines(grace)
        return published

    def recover_after_restart(self) -> int:
        """Embedded mode only: this process is the only worker, so whatever was in flight when
        it last stopped is orphaned and its queued messages died with it. Returns how many jobs
        were published again."""
        with self.db.write() as session:
            jobs_repository.orphan_all_in_flight(session, utcnow() - timedelta(seconds=1))
        with self.db.read() as session:
            orphans = list(jobs_repository.lapsed_leases(session, utcnow(), 100_000))
        published = sum(self.lifecycle.recover_lapsed(job) for job in orphans)
        with self.db.read() as session:
            pending = list(jobs_repository.undispatched(session, utcnow(), 100_000))
        published += sum(self.dispatcher.publish(job.id, job.queue, None) for job in pending)
        self.dispatcher.advance_video_lines(utcnow())
        return published
