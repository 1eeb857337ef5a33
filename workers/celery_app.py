"""The Celery application: one task, routed to the image, video or style queue."""

from __future__ import annotations

from typing import Any

from celery import Celery

from core.config import QueueConfig
from core.settings import Settings
from workers.queues import RUN_JOB_TASK


def make_celery(settings: Settings, runner: Any = None, pool: QueueConfig | None = None) -> Celery:
    """A Celery app; with a `runner` it also executes jobs (a worker of the queue configured by
    `pool`), without one it only publishes (a gateway). Embedded mode builds one app per worker:
    `setup_queues()` mutates an app's queue table, so workers sharing one app would all consume
    the same queue."""
    pool = pool or settings.service_config().queues.image
    app = Celery("sfumato", broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=pool.prefetch,
        task_ignore_result=True,
        task_default_queue=f"{settings.namespace}.image",
        task_create_missing_queues=True,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": pool.visibility_timeout_seconds,
            # The default 1 s poll of the in-memory transport is 1 s of start latency per job.
            "polling_interval": settings.broker_polling_interval,
        },
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
        enable_utc=True,
    )
    app.sfumato_runner = runner

    @app.task(
        name=RUN_JOB_TASK, bind=True, shared=False, acks_late=True, reject_on_worker_lost=True
    )
    def run_job(task: Any, job_id: str) -> None:
        task.app.sfumato_runner.run(job_id)

    del run_job
    return app
