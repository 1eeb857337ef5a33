"""The broker as every process sees it: the Celery app, the one task's name, the queues' names on
the broker, and the publisher that sends a job's task.

Tasks are sent by name (`send_task`), so whoever publishes (the gateway, the sweep) never imports
worker code; a worker registers the task on an app made here (`workers/celery_app.py`).
"""

from __future__ import annotations

import threading
import time
from queue import Empty
from typing import Any
from urllib.parse import urlsplit

from celery import Celery
from kombu.transport import memory

from core.service_config import QueueConfig
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


# kombu's in-memory transport polls: a consumer that finds nothing sleeps `polling_interval` and
# looks again. At 1 s (the default) that is a second of start latency per job; at a few ms, each
# of an embedded gateway's idle workers spins hundreds of times a second, and together they took
# two fifths of the serving process's CPU (and GIL) from requests (docs/benchmarks.md, job_read).
WAKING_MEMORY_TRANSPORT = "core.broker:WakingMemoryTransport"
# A consumer rechecks at least this often: a safety net, not the way it learns of messages.
MEMORY_RECHECK_SECONDS = 0.5


class _Wakeups:
    """Counts what can let a waiting consumer take a message: one put on a queue, or a delivery
    settled (acknowledged, rejected, recovered: room again under the prefetch limit)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.count = 0

    def announce(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait_past(self, seen: int, seconds: float) -> None:
        with self.changed:
            if self.count == seen:
                self.changed.wait(seconds)


WAKEUPS = _Wakeups()


class WakingMemoryChannel(memory.Channel):
    def _put(self, queue: str, message: Any, **kwargs: Any) -> None:
        super()._put(queue, message, **kwargs)
        WAKEUPS.announce()

    def _put_fanout(
        self, exchange: str, message: Any, routing_key: str | None = None, **kwargs: Any
    ) -> None:
        super()._put_fanout(exchange, message, routing_key, **kwargs)
        WAKEUPS.announce()

    def basic_ack(self, delivery_tag: int, multiple: bool = False) -> None:
        super().basic_ack(delivery_tag, multiple)
        WAKEUPS.announce()

    def basic_reject(self, delivery_tag: int, requeue: bool = False) -> None:
        super().basic_reject(delivery_tag, requeue)
        WAKEUPS.announce()

    def basic_recover(self, requeue: bool = False) -> None:
        super().basic_recover(requeue)
        WAKEUPS.announce()


class WakingMemoryTransport(memory.Transport):
    """The in-memory transport whose idle consumers sleep until a message is put (or a delivery
    settled), instead of polling."""

    Channel = WakingMemoryChannel

    # kombu's two base classes disagree on this signature; this is the virtual one's.
    def drain_events(self, connection: Any, timeout: float | None = None) -> None:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        cycle = self.cycle
        assert cycle is not None, "a connection's channels are set up before it drains"
        while True:
            seen = WAKEUPS.count  # before looking: whatever comes after wakes the wait below
            try:
                cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                pass
            wait = MEMORY_RECHECK_SECONDS
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError()  # socket.timeout, which Celery expects
                wait = min(wait, remaining)
            WAKEUPS.wait_past(seen, wait)


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
        broker_transport_options={"visibility_timeout": pool.visibility_timeout_seconds},
        # In-memory: consumers woken by what they wait for, not polling (see the class).
        broker_transport=(
            WAKING_MEMORY_TRANSPORT if urlsplit(settings.broker_url).scheme == "memory" else None
        ),
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
