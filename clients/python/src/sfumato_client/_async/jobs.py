"""Jobs: read, list, cancel, wait for (the event stream, else long-polls) and download."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from pydantic import PrivateAttr

from sfumato_client._async.transport import AsyncTransport
from sfumato_client._files import FileInput, download_paths, job_media
from sfumato_client._http import LONG_POLL_TIMEOUT, MAX_PAGE_SIZE
from sfumato_client._waiting import ProgressCallback, Waiting, event_job, finished, stream_usable
from sfumato_client.errors import APIConnectionError, APIError, JobTimeoutError
from sfumato_client.models import JobData
from sfumato_client.sse import SSEDecoder


class AsyncJob(JobData):
    """A job with what acts on it: `wait()`, `download()`, `cancel()` and `refresh()`."""

    _jobs: AsyncJobs = PrivateAttr()

    async def wait(
        self, timeout: float | None = None, on_progress: ProgressCallback | None = None
    ) -> AsyncJob:
        """Follows the job until it is terminal and returns it; raises `JobFailedError` when it
        failed and `JobTimeoutError` after `timeout` seconds. `on_progress(job)` sees every
        update (its `preview_url` too: `save_preview` writes it)."""
        return await self._jobs.wait(self.id, timeout=timeout, on_progress=on_progress)

    async def save_preview(self, path: FileInput) -> Path | None:
        """Writes the job's live preview (a JPEG) to `path`; None when it has none now."""
        return await self._jobs.save_preview(self, path)

    async def download(self, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        """Saves the images or the video of this completed job; returns the paths written."""
        return await self._jobs.download(self, path_or_dir)

    async def cancel(self) -> AsyncJob:
        return await self._jobs.cancel(self.id)

    async def refresh(self) -> AsyncJob:
        return await self._jobs.get(self.id)


class AsyncJobs:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    def bind(self, data: dict[str, Any]) -> AsyncJob:
        job = AsyncJob.model_validate(data)
        job._jobs = self
        return job

    async def get(self, job_id: str, *, wait: bool = False) -> AsyncJob:
        """The job; `wait=True` holds until it is terminal or about 55 s pass."""
        return await self._read(f"/jobs/{job_id}", wait)

    async def _read(
        self, path: str, wait: bool, timeout: float | None = None, retries: int | None = None
    ) -> AsyncJob:
        """A job read at `path` (any job type's own read), long-polled with `wait`."""
        body = await self._transport.request(
            "GET",
            path,
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
        """The caller's jobs, newest first, following `nextCursor` page after page; `limit`
        caps how many are yielded, `page_size` (1-50) how many a request fetches;
        `type="video.generate"` lists video jobs."""
        filters = {"status": status, "type": type}
        async for data in self._transport.pages("/jobs", filters, limit, page_size):
            yield self.bind(data)

    async def cancel(self, job_id: str) -> AsyncJob:
        """Cancels an in-flight job (it comes back `failed`, "Job cancelled"); a terminal job
        comes back unchanged."""
        body = await self._transport.request("POST", f"/jobs/{job_id}/cancel")
        return self.bind(body["data"])

    async def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AsyncJob:
        """Follows the job's event stream (long-polls where the server has none or the stream
        keeps breaking) until it is terminal; see the job's `wait()`."""
        waiting = Waiting(timeout, on_progress)
        job = await self._follow_events(job_id, waiting)
        if job is None:
            job = await self._long_poll(job_id, waiting)
        return finished(job)

    async def _follow_events(self, job_id: str, waiting: Waiting) -> AsyncJob | None:
        for _attempt in range(self._transport.retry.max_retries + 1):
            try:
                async with self._transport.stream(
                    f"/jobs/{job_id}/events", waiting.stream_headers(), waiting.stream_timeout()
                ) as response:
                    usable = stream_usable(response)
                    if usable is False:
                        return None
                    if usable:
                        decoder = SSEDecoder()
                        async for line in response.aiter_lines():
                            event = decoder.feed(line)
                            waiting.last_event_id = decoder.last_event_id
                            data = event_job(event.data) if event is not None else None
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

    async def _long_poll(self, job_id: str, waiting: Waiting) -> AsyncJob:
        while True:
            if waiting.expired():
                raise await self._timed_out(job_id, waiting)
            timeout, retries = waiting.poll_limits()
            try:
                job = await self._read(f"/jobs/{job_id}", True, timeout, retries)
            except APIConnectionError:
                if waiting.expired():
                    raise await self._timed_out(job_id, waiting) from None
                raise
            waiting.seen(job)
            if job.is_terminal:
                return job

    async def _timed_out(self, job_id: str, waiting: Waiting) -> JobTimeoutError:
        job = waiting.last_job or await self.get(job_id)
        return JobTimeoutError(job, waiting.timeout or 0)

    async def save_preview(self, job: JobData, path: FileInput) -> Path | None:
        """Writes the live preview `job` shows (`preview_url`) to `path`, replacing the file at
        once (a viewer never reads half a picture); None when it shows none. A preview the job
        has already replaced is gone from the server: None then too."""
        if not job.preview_url:
            return None
        try:
            response = await self._transport.send("GET", job.preview_url, headers={})
        except APIError as error:
            if error.status == 404:  # replaced (deleted) since the job was read
                return None
            raise
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_bytes(response.content)
        partial.replace(target)
        return target

    async def download(self, job: JobData, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        """Saves a completed job's images or video (see `_files.download_paths` for where);
        returns the paths written."""
        media = job_media(job)
        paths = download_paths(path_or_dir, [name for _, name in media])
        for (url, _), path in zip(media, paths, strict=True):
            response = await self._transport.send("GET", url, headers={})
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(response.content)
        return paths
