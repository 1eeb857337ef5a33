"""The broker as every process sees it: the Celery app, the one task's name, the queues' names on
the broker, and the publisher that sends a job's task.

Tasks are sent by name (`send_task`), so whoever publishes (the gateway, the sweep) never imports
worker code; a worker registers the task on an app made here (`workers/celery_app.py`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from celery import Celery

from core.config import QueueConfig
from core.settings import Settings

RUN_JOB_TASK = "sfumato.run_job"


def broker_queue(namespace: str, queue: str) -> str:
    """The broker's name of a queue: namespaced, so deployments sharing a Redis (or services
    sharing one process's in-memory broker, as tests do) never take each other's tasks."""
    return f"{namespace}.{queue}"


def celery_broker_url(broker_url: str) -> str:
    """The in-memory transport's URL with a host: kombu warns "No hostname was supplied" each
    time it copies a connection whose URL has none (every publish and consume in embedded
    mode)."""
    parts = urlsplit(broker_url)
    if parts.scheme == "memory" and not parts.netloc:
        return parts._replace(netloc="localhost").geturl()
    return broker_url


def make_celery(settings: Settings, pool: QueueConfig | None = None) -> Celery:
    """A Celery app for this deployment's broker, configured for a pool's worker (`pool`) or,
    without one, for publishing. Embedded mode builds one app per worker: `setup_queues()`
    mutates an app's queue table, so workers sharing one app would all consume the same queue."""
    pool = pool or settings.service_config().queues.image
    app = Celery("sfumato", broker=celery_broker_url(settings.broker_url), set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=pool.prefetch,
        task_ignore_result=True,
        task_default_queue=broker_queue(settings.namespace, "image"),
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
    return app


class TaskPublisher:
    """Sends a job's task to its queue, by the task's name; revokes a queued one."""

    def __init__(self, celery: Celery, namespace: str) -> None:
        self.celery = celery
        self.namespace = namespace

    @classmethod
    def from_settings(cls, settings: Settings) -> TaskPublisher:
        return cls(make_celery(settings), settings.namespace)

    def send(self, job_id: str, queue: str) -> None:
        """Raises whatever the broker raises when it is out of reach."""
        self.celery.send_task(
            RUN_JOB_TASK,
            args=[job_id],
            queue=broker_queue(self.namespace, queue),
            task_id=job_id,
        )

    def revoke(self, job_id: str) -> None:
        self.celery.control.revoke(job_id)
