"""Jobs: read, list, cancel, wait for (the event stream, else long-polls) and download."""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import PrivateAttr

from sfumato_client._files import FileInput, download_paths, job_media
from sfumato_client._transport import LONG_POLL_TIMEOUT, AsyncTransport, SyncTransport
from sfumato_client.errors import APIConnectionError, JobFailedError, JobTimeoutError
from sfumato_client.models import JobData
from sfumato_client.resources._pages import MAX_PAGE_SIZE, async_pages, pages
from sfumato_client.sse import SSEDecoder

# The server sends a heartbeat every 15 s, so a quiet minute means a dead stream.
STREAM_READ_TIMEOUT = 60.0
ProgressCallback = Callable[[JobData], Any]


class Job(JobData):
    """A job of the sync client: `wait()`, `download()` and `cancel()` act on it."""

    _jobs: Jobs = PrivateAttr()

    def wait(
        self, timeout: float | None = None, on_progress: ProgressCallback | None = None
    ) -> Job:
        """Follows the job until it is terminal and returns it; raises `JobFailedError` when it
        failed and `JobTimeoutError` after `timeout` seconds. `on_progress(job)` sees every
        update."""
        return self._jobs.wait(self.id, timeout=timeout, on_progress=on_progress)

    def download(self, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        """Saves the images or the video of this completed job; returns the paths written."""
        return self._jobs.download(self, path_or_dir)

    def cancel(self) -> Job:
        return self._jobs.cancel(self.id)

    def refresh(self) -> Job:
        return self._jobs.get(self.id)


class AsyncJob(JobData):
    """A job of the async client: `wait()`, `download()` and `cancel()` are coroutines."""

    _jobs: AsyncJobs = PrivateAttr()

    async def wait(
        self, timeout: float | None = None, on_progress: ProgressCallback | None = None
    ) -> AsyncJob:
        return await self._jobs.wait(self.id, timeout=timeout, on_progress=on_progress)

    async def download(self, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        return await self._jobs.download(self, path_or_dir)

    async def cancel(self) -> AsyncJob:
        return await self._jobs.cancel(self.id)

    async def refresh(self) -> AsyncJob:
        return await self._jobs.get(self.id)


AnyJob = TypeVar("AnyJob", bound=JobData)


class _Waiting:
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


def _event_job(data: str) -> dict[str, Any] | None:
    try:
        payload = json.loads(data)
    except ValueError:
        return None
    job = payload.get("data") if isinstance(payload, dict) else None
    return job if isinstance(job, dict) else None


def _stream_usable(response: httpx.Response) -> bool | None:
    """True to read the stream; False to fall back to long-polls (no such endpoint here); None
    for an answer worth trying again."""
    if response.status_code in (404, 405):
        return False
    if response.status_code == 429 or response.status_code >= 500:
        return None
    content_type = response.headers.get("content-type", "")
    return response.status_code < 400 and content_type.startswith("text/event-stream")


def _finished(job: AnyJob) -> AnyJob:
    if job.status == "failed":
        raise JobFailedError(job)
    return job


class Jobs:
    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def bind(self, data: dict[str, Any]) -> Job:
        job = Job.model_validate(data)
        job._jobs = self
        return job

    def get(self, job_id: str, *, wait: bool = False) -> Job:
        """The job; `wait=True` holds until it is terminal or about 55 s pass."""
        return self._get(job_id, wait)

    def _get(
        self, job_id: str, wait: bool, timeout: float | None = None, retries: int | None = None
    ) -> Job:
        body = self._transport.request(
            "GET",
            f"/jobs/{job_id}",
            params={"wait": "true"} if wait else None,
            timeout=timeout or (LONG_POLL_TIMEOUT if wait else None),
            max_retries=retries,
        )
        return self.bind(body["data"])

    def list(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        limit: int | None = None,
        page_size: int = MAX_PAGE_SIZE,
    ) -> Iterator[Job]:
        """The caller's jobs, newest first, following `nextCursor` page after page; `limit`
        caps how many are yielded, `page_size` (1-50) how many a request fetches;
        `type="video.generate"` lists video jobs."""
        filters = {"status": status, "type": type}
        for data in pages(self._transport, "/jobs", filters, limit, page_size):
            yield self.bind(data)

    def cancel(self, job_id: str) -> Job:
        """Cancels an in-flight job (it comes back `failed`, "Job cancelled"); a terminal job
        comes back unchanged."""
        return self.bind(self._transport.request("POST", f"/jobs/{job_id}/cancel")["data"])

    def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Job:
        """Follows the job's event stream (long-polls where the server has none or the stream
        keeps breaking) until it is terminal; see `Job.wait`."""
        waiting = _Waiting(timeout, on_progress)
        job = self._follow_events(job_id, waiting)
        if job is None:
            job = self._long_poll(job_id, waiting)
        return _finished(job)

    def _follow_events(self, job_id: str, waiting: _Waiting) -> Job | None:
        for _attempt in range(self._transport.retry.max_retries + 1):
            try:
                with self._transport.stream(
                    f"/jobs/{job_id}/events", waiting.stream_headers(), waiting.stream_timeout()
                ) as response:
                    usable = _stream_usable(response)
                    if usable is False:
                        return None
                    if usable:
                        decoder = SSEDecoder()
                        for line in response.iter_lines():
                            event = decoder.feed(line)
                            waiting.last_event_id = decoder.last_event_id
                            data = _event_job(event.data) if event is not None else None
                            if data is not None:
                                job = self.bind(data)
                                waiting.seen(job)
                                if job.is_terminal:
                                    return job
                            if waiting.expired():
                                raise self._timed_out(job_id, waiting)
            except httpx.TransportError:
                pass
            if waiting.expired():
                raise self._timed_out(job_id, waiting)
        return None

    def _long_poll(self, job_id: str, waiting: _Waiting) -> Job:
        while True:
            if waiting.expired():
                raise self._timed_out(job_id, waiting)
            timeout, retries = waiting.poll_limits()
            try:
                job = self._get(job_id, True, timeout, retries)
            except APIConnectionError:
                if waiting.expired():
                    raise self._timed_out(job_id, waiting) from None
                raise
            waiting.seen(job)
            if job.is_terminal:
                return job

    def _timed_out(self, job_id: str, waiting: _Waiting) -> JobTimeoutError:
        job = waiting.last_job or self.get(job_id)
        return JobTimeoutError(job, waiting.timeout or 0)

    def download(self, job: JobData, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        """Saves a completed job's images or video (see `_files.download_paths` for where);
        returns the paths written."""
        media = job_media(job)
        paths = download_paths(path_or_dir, [name for _, name in media])
        for (url, _), path in zip(media, paths, strict=True):
            response = self._transport.send("GET", url, headers={})
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(response.content)
        return paths


class AsyncJobs:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    def bind(self, data: dict[str, Any]) -> AsyncJob:
        job = AsyncJob.model_validate(data)
        job._jobs = self
        return job

    async def get(self, job_id: str, *, wait: bool = False) -> AsyncJob:
        return await self._get(job_id, wait)

    async def _get(
        self, job_id: str, wait: bool, timeout: float | None = None, retries: int | None = None
    ) -> AsyncJob:
        body = await self._transport.request(
            "GET",
            f"/jobs/{job_id}",
            params={"wait": "true"} if wait else None,
            timeout=timeout or (LONG_POLL_TIMEOUT if wait else None),
            max_retries=retries,
        )
        return self.bind(body["data"])

    async def list(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        limit: int | None = None,
        page_size: int = MAX_PAGE_SIZE,
    ) -> AsyncIterator[AsyncJob]:
        filters = {"status": status, "type": type}
        async for data in async_pages(self._transport, "/jobs", filters, limit, page_size):
            yield self.bind(data)

    async def cancel(self, job_id: str) -> AsyncJob:
        body = await self._transport.request("POST", f"/jobs/{job_id}/cancel")
        return self.bind(body["data"])

    async def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AsyncJob:
        waiting = _Waiting(timeout, on_progress)
        job = await self._follow_events(job_id, waiting)
        if job is None:
            job = await self._long_poll(job_id, waiting)
        return _finished(job)

    async def _follow_events(self, job_id: str, waiting: _Waiting) -> AsyncJob | None:
        for _attempt in range(self._transport.retry.max_retries + 1):
            try:
                async with self._transport.stream(
                    f"/jobs/{job_id}/events", waiting.stream_headers(), waiting.stream_timeout()
                ) as response:
                    usable = _stream_usable(response)
                    if usable is False:
                        return None
                    if usable:
                        decoder = SSEDecoder()
                        async for line in response.aiter_lines():
                            event = decoder.feed(line)
                            waiting.last_event_id = decoder.last_event_id
                            data = _event_job(event.data) if event is not None else None
                            if data is not None:
                                job = self.bind(data)
                                waiting.seen(job)
                                if job.is_terminal:
                                    return job
                            if waiting.expired():
                                raise await self._timed_out(job_id, waiting)
            except httpx.TransportError:
                pass
            if waiting.expired():
                raise await self._timed_out(job_id, waiting)
        return None

    async def _long_poll(self, job_id: str, waiting: _Waiting) -> AsyncJob:
        while True:
            if waiting.expired():
                raise await self._timed_out(job_id, waiting)
            timeout, retries = waiting.poll_limits()
            try:
                job = await self._get(job_id, True, timeout, retries)
            except APIConnectionError:
                if waiting.expired():
                    raise await self._timed_out(job_id, waiting) from None
                raise
            waiting.seen(job)
            if job.is_terminal:
                return job

    async def _timed_out(self, job_id: str, waiting: _Waiting) -> JobTimeoutError:
        job = waiting.last_job or await self.get(job_id)
        return JobTimeoutError(job, waiting.timeout or 0)

    async def download(self, job: JobData, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        media = job_media(job)
        paths = download_paths(path_or_dir, [name for _, name in media])
        for (url, _), path in zip(media, paths, strict=True):
            response = await self._transport.send("GET", url, headers={})
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(response.content)
        return paths
