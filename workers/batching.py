"""Batching: compatible image jobs running at once share one pipeline call.

Each job still arrives as its own Celery task and is claimed, leased, acknowledged and
completed by its own worker thread, exactly as without batching; only the pipeline call is
shared. The first thread with a job of a given batch key opens a batch and waits up to the
window (`[queues.image] batch_window_ms`) for companions; threads whose jobs have the same key
join it until it is full (the pipeline's `batch_capacity`, counted in images); then the opener
runs one `run_batch` for all and hands each member its own output. A member cancelled meanwhile is
dropped (its own thread unwinds at once; the call goes on for the others).

Why not celery-batches: its task receives a list of requests in one thread and acknowledges
them together, so the per-job claim, lease keeper and cancel of workers/runner.py would have to
be rebuilt for lists; here they stay per job and the image worker only needs as many threads as
its largest batch (`[queues.image] concurrency` >= the registry's batch_limit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from pipelines.base import Cancelled, ImageOutput, JobControl, PreviewControl, wants_preview

log = logging.getLogger(__name__)

# Told the operation and the number of jobs of every batched call: the place for metrics.
BatchListener = Callable[[str, int], None]


@runtime_checkable
class BatchablePipeline(Protocol):
    operation: str

    def batch_key(self, inputs: Any) -> Hashable | None: ...

    def batch_weight(self, inputs: Any) -> int: ...

    def batch_capacity(self) -> int: ...

    def run_batch(
        self, inputs: Sequence[Any], controls: Sequence[JobControl]
    ) -> list[ImageOutput | BaseException]: ...


class _MemberControl:
    """A member's own control, remembering its last progress so a waiting member can check
    for its cancel without moving its progress bar."""

    def __init__(self, control: JobControl) -> None:
        self.control = control
        self.fraction = 0.0

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.fraction = fraction
        self.control.progress(fraction, message)

    def wants_preview(self) -> bool:
        return wants_preview(self.control)

    def preview(self, image: Image.Image) -> None:
        if isinstance(self.control, PreviewControl):
            self.control.preview(image)


@dataclass
class _Member:
    inputs: Any
    control: _MemberControl
    done: threading.Event = field(default_factory=threading.Event)
    result: ImageOutput | BaseException | None = None


@dataclass
class _Batch:
    capacity: int
    members: list[_Member] = field(default_factory=list)
    weight: int = 0
    full: threading.Event = field(default_factory=threading.Event)


class Batcher:
    """Groups compatible jobs of the same pipeline into one call (see the module's doc)."""

    def __init__(self, window_seconds: float, poll_seconds: float = 0.05) -> None:
        self.window_seconds = window_seconds
        self.poll_seconds = poll_seconds
        self.listeners: list[BatchListener] = []
        self._open: dict[tuple[int, Hashable], _Batch] = {}
        self._lock = threading.Lock()

    def run(self, pipeline: Any, inputs: Any, control: JobControl) -> ImageOutput:
        """The job's output, from a batched call when the pipeline batches, else alone."""
        if not isinstance(pipeline, BatchablePipeline) or self.window_seconds <= 0:
            output: ImageOutput = pipeline.run(inputs, control)
            return output
        key = pipeline.batch_key(inputs)
        weight = pipeline.batch_weight(inputs)
        capacity = pipeline.batch_capacity()
        if key is None or weight >= capacity:
            return self._run_alone(pipeline, inputs, control)
        member = _Member(inputs, _MemberControl(control))
        slot = (id(pipeline), key)
        with self._lock:
            batch = self._open.get(slot)
            opener = batch is None or batch.weight + weight > batch.capacity
            if opener:
                batch = _Batch(capacity)
                self._open[slot] = batch
            assert batch is not None
            batch.members.append(member)
            batch.weight += weight
            if batch.weight >= batch.capacity:
                batch.full.set()
        if opener:
            self._lead(pipeline, slot, batch)
        else:
            self._wait(member)
        if isinstance(member.result, BaseException):
            raise member.result
        assert member.result is not None
        return member.result

    def _run_alone(self, pipeline: Any, inputs: Any, control: JobControl) -> ImageOutput:
        for listener in self.listeners:
            listener(pipeline.operation, 1)
        output: ImageOutput = pipeline.run(inputs, control)
        return output

    def _lead(self, pipeline: Any, slot: tuple[int, Hashable], batch: _Batch) -> None:
        batch.full.wait(self.window_seconds)
        with self._lock:
            if self._open.get(slot) is batch:
                del self._open[slot]  # closed: later jobs open the next batch
        members = batch.members
        for listener in self.listeners:
            listener(pipeline.operation, len(members))
        if len(members) > 1:
            log.info("%s: one call for %d jobs", pipeline.operation, len(members))
        try:
            results = pipeline.run_batch(
                [member.inputs for member in members], [member.control for member in members]
            )
        except BaseException as error:
            results = [error] * len(members)
        for member, result in zip(members, results, strict=True):
            member.result = result
            member.done.set()

    def _wait(self, member: _Member) -> None:
        """Wait for the opener's call; a cancel of this job ends the wait at once (the call
        then drops this member when it next reports progress)."""
        while not member.done.wait(self.poll_seconds):
            try:
                member.control.control.progress(member.control.fraction)
            except Cancelled as cancelled:
                member.result = cancelled
                return
