"""Celery workers inside `sfumato serve`: one per queue, each on its own app, in threads."""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass

from celery.worker import WorkController
from celery.worker import state as worker_state

from core.broker import broker_queue
from core.services import Services
from workers.celery_app import worker_celery
from workers.runner import JobRunner

log = logging.getLogger(__name__)


class _ReadyWorkController(WorkController):
    """A WorkController that says when its consumer is up (as Celery's test worker does)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.consumer_ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: object) -> None:
        self.consumer_ready.set()


@dataclass
class _Running:
    queue: str
    controller: _ReadyWorkController
    thread: threading.Thread


class EmbeddedWorkers:
    def __init__(self, services: Services, runner: JobRunner, concurrency: dict[str, int]):
        self.services = services
        self.runner = runner
        self.concurrency = concurrency
        self._running: list[_Running] = []

    def start(self) -> None:
        self.runner.warm_up(list(self.concurrency))
        for queue, threads in self.concurrency.items():
            app = worker_celery(
                self.services.settings, self.runner, self.services.config.queues.of(queue)
            )
            controller = _ReadyWorkController(
                app=app,
                queues=[broker_queue(self.services.settings.namespace, queue)],
                concurrency=threads,
                pool_cls="workers.pool:AppThreadPool",
                hostname=f"{queue}@embedded",
                without_heartbeat=True,
                without_mingle=True,
                without_gossip=True,
                loglevel="WARNING",
            )
            thread = threading.Thread(target=controller.start, name=f"worker-{queue}", daemon=True)
            thread.start()
            self._running.append(_Running(queue, controller, thread))
        for running in self._running:
            if not running.controller.consumer_ready.wait(30):
                raise RuntimeError(f"the embedded {running.queue} worker did not start")
        log.info("embedded workers consuming %s", ", ".join(self.concurrency))

    def stop(self, deadline_seconds: float = 10.0) -> None:
        """Stop all workers in parallel; give up on a task that does not cooperate in time."""
        if not self._running:
            return
        worker_state.should_terminate = 0
        # Celery's shutdown sets the process's default socket timeout (5 s) in each stopping
        # thread and puts back what it saw; stops in parallel race, and the loser leaves 5 s
        # behind for every socket this process makes afterwards (the serving process outlives
        # its workers): so once every stop has returned, the default is put back here.
        default_socket_timeout = socket.getdefaulttimeout()
        started = time.monotonic()
        stops = [
            threading.Thread(
                target=running.controller.stop, kwargs={"in_sighandler": False}, daemon=True
            )
            for running in self._running
        ]
        for stop in stops:
            stop.start()
        for running, stop in zip(self._running, stops, strict=True):
            for thread in (running.thread, stop):
                thread.join(max(0.0, deadline_seconds - (time.monotonic() - started)))
            if running.thread.is_alive() or stop.is_alive():
                log.warning("the %s worker did not stop in time; leaving it", running.queue)
        self._running.clear()
        socket.setdefaulttimeout(default_socket_timeout)
        worker_state.should_terminate = None
        self.runner.close()
