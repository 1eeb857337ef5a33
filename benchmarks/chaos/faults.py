"""The faults the soak injects at random times, each one logged."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass

from sqlalchemy import select

from benchmarks.chaos.cluster import Cluster, worker_ready
from core.tables import JobRow

FAULT_KINDS = (
    "worker SIGKILL mid-job",
    "worker SIGTERM",
    "gateway SIGKILL",
    "Redis restart",
    "PostgreSQL cut",
    "object store cut",
    "full disk",
)


@dataclass
class Fault:
    at: float
    kind: str
    detail: str


class Faults:
    """Injects faults at random times until stopped; each one logged with its time."""

    def __init__(self, running: Cluster, started: float, interval: tuple[float, float]) -> None:
        self.cluster = running
        self.started = started
        self.interval = interval
        self.log: list[Fault] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)

    def __enter__(self) -> Faults:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _note(self, kind: str, detail: str) -> None:
        fault = Fault(round(time.monotonic() - self.started, 1), kind, detail)
        self.log.append(fault)
        print(f"  fault at {fault.at:6.1f}s: {kind} ({detail})", flush=True)

    def _run(self) -> None:
        kinds = list(FAULT_KINDS)
        random.shuffle(kinds)
        while not self._stop.wait(random.uniform(*self.interval)):
            self.cluster.restart_exited()
            # Every kind once before any repeats, then at random.
            kind = kinds.pop() if kinds else random.choice(FAULT_KINDS)
            try:
                self.inject(kind)
            except Exception as error:
                self._note(kind, f"could not inject: {error!r}")

    def _processing(self, queue: str) -> int:
        with self.cluster.services.db.read() as session:
            rows = session.scalars(
                select(JobRow.id).where(JobRow.status == "processing", JobRow.queue == queue)
            ).all()
        return len(rows)

    def inject(self, kind: str) -> None:
        running = self.cluster
        if kind in ("worker SIGKILL mid-job", "worker SIGTERM"):
            queue = random.choice(["image", "image", "image", "video", "style"])
            # Mid-job: wait (a little) for a job of that queue to be running.
            deadline = time.monotonic() + 5
            while self._processing(queue) == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            busy = self._processing(queue)
            # Only a worker that is up: on a busy machine a replacement takes minutes to start,
            # and killing starting workers would only leave a queue without any.
            with running.lock:
                candidates = [(q, c) for q, c in running.workers if q == queue and worker_ready(c)]
            if not candidates:
                self._note(kind, f"skipped: no {queue} worker is up yet")
                return
            target_queue, child = random.choice(candidates)
            sig = signal.SIGKILL if "SIGKILL" in kind else signal.SIGTERM
            os.kill(child.pid, sig)
            running.replace_worker(target_queue, child)
            self._note(kind, f"{queue} worker pid {child.pid}, {busy} {queue} jobs processing")
        elif kind == "gateway SIGKILL":
            port = random.choice(list(running.gateways))
            os.kill(running.gateways[port].pid, signal.SIGKILL)
            self._note(kind, f"gateway on port {port}, restarted 2 s later")
            time.sleep(2)
            running.gateways[port].popen.wait()  # type: ignore[union-attr]
            running.start_gateway(port)
        elif kind == "Redis restart":
            running.redis.kill()
            self._note(kind, "killed (its queued messages lost), started again 1 s later")
            time.sleep(1)
            running.redis.start()
        elif kind == "full disk":
            if running.scratch is None:
                self._note(kind, f"skipped: {running.scratch_unavailable}")
                return
            seconds = random.uniform(2, 4)
            running.scratch.fill()
            self._note(kind, f"the workers' scratch disk full for {seconds:.1f} s")
            time.sleep(seconds)
            running.scratch.free()
        else:
            proxy = running.postgres if kind == "PostgreSQL cut" else running.storage
            seconds = random.uniform(2, 4)
            proxy.cut()
            self._note(kind, f"{seconds:.1f} s")
            time.sleep(seconds)
            proxy.restore()
