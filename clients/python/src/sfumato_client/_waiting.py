"""Following a job to its end, none of it I/O: the deadline, what the event stream's answer
and events mean, and the limits of each stream and long-poll."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from sfumato_client._http import LONG_POLL_TIMEOUT
from sfumato_client.errors import JobFailedError
from sfumato_client.models import JobData

# The server sends a heartbeat every 15 s, so a quiet minute means a dead stream.
STREAM_READ_TIMEOUT = 60.0
ProgressCallback = Callable[[JobData], Any]
AnyJob = TypeVar("AnyJob", bound=JobData)


class Waiting:
    """The state of one wait: its deadline, the last job and event id seen."""

    def __init__(self, timeout: float | None, on_progress: ProgressCallback | None) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.on_progress = on_progress
        self.last_job: Any = None
        self.last_event_id: str | None = None

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def seen(self, job: Any) -> None:
        self.last_job = job
        if self.on_progress is not None:
            self.on_progress(job)

    def stream_headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def stream_timeout(self) -> httpx.Timeout:
        remaining = self.remaining()
        read = STREAM_READ_TIMEOUT if remaining is None else max(0.1, min(remaining, 60.0))
        return httpx.Timeout(10.0, read=read)

    def poll_limits(self) -> tuple[float, int | None]:
        """The timeout of the next long-poll, and its retries (none when it is the last)."""
        remaining = self.remaining()
        if remaining is None or remaining > LONG_POLL_TIMEOUT:
            return LONG_POLL_TIMEOUT, None
        return max(0.1, remaining), 0


def event_job(data: str) -> dict[str, Any] | None:
    """The job an event's data carries, or None for data of another kind."""
    try:
        payload = json.loads(data)
    except ValueError:
        return None
    job = payload.get("data") if isinstance(payload, dict) else None
    return job if isinstance(job, dict) else None


def stream_usable(response: httpx.Response) -> bool | None:
    """True to read the stream; False to fall back to long-polls (no such endpoint here); None
    for an answer worth trying again."""
    if response.status_code in (404, 405):
        return False
    if response.status_code == 429 or response.status_code >= 500:
        return None
    content_type = response.headers.get("content-type", "")
    return response.status_code < 400 and content_type.startswith("text/event-stream")


def finished(job: AnyJob) -> AnyJob:
    """The terminal job, or `JobFailedError` when it failed."""
    if job.status == "failed":
        raise JobFailedError(job)
    return job
