"""The worker's Celery app: core's app with the one task registered, run by a `JobRunner`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from celery import Celery
from celery.exceptions import Reject

from core.broker import RUN_JOB_TASK, make_celery
from core.service_config import QueueConfig
from core.settings import Settings
from workers.shutdown import ShuttingDown

REQUEUE_PAUSE_SECONDS = 0.2

if TYPE_CHECKING:
    from workers.runner import JobRunner


def worker_celery(settings: Settings, runner: JobRunner, pool: QueueConfig) -> Celery:
    """An app that executes jobs: a worker of the queue configured by `pool`."""
    app = make_celery(settings, pool)
    app.sfumato_runner = runner

    @app.task(
        name=RUN_JOB_TASK, bind=True, shared=False, acks_late=True, reject_on_worker_lost=True
    )
    def run_job(task: Any, job_id: str) -> None:
        try:
            task.app.sfumato_runner.run(job_id)
        except ShuttingDown:
            # Back to the queue for another worker; a pause, as this one may be handed it
            # again until its process exits.
            time.sleep(REQUEUE_PAUSE_SECONDS)
            raise Reject(requeue=True) from None

    del run_job
    return app
