# Generated from sfumato_client/_async/jobs.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""Jobs: read, list, cancel, wait for (the event stream, else long-polls) and download."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from pydantic import PrivateAttr

from sfumato_client._files import FileInput, download_paths, job_media
from sfumato_client._http import LONG_POLL_TIMEOUT, MAX_PAGE_SIZE
from sfumato_client._sync.transport import Transport
from sfumato_client._waiting import ProgressCallback, Waiting, event_job, finished, stream_usable
from sfumato_client.errors import APIConnectionError, APIError, JobTimeoutError
from sfumato_client.models import JobData
from sfumato_client.sse import SSEDecoder


class Job(JobData):
    """A job with what acts on it: `wait()`, `download()`, `cancel()` and `refresh()`."""

    _jobs: Jobs = PrivateAttr()

    def wait(
        self, timeout: float | None = None, on_progress: ProgressCallback | None = None
    ) -> Job:
        """Follows the job until it is terminal and returns it; raises `JobFailedError` when it
        failed and `JobTimeoutError` after `timeout` seconds. `on_progress(job)` sees every
        update (its `preview_url` too: `save_preview` writes it)."""
        return self._jobs.wait(self.id, timeout=timeout, on_progress=on_progress)

    def save_preview(self, path: FileInput) -> Path | None:
        """Writes the job's live preview (a JPEG) to `path`; None when it has none now."""
        return self._jobs.save_preview(self, path)

    def download(self, path_or_dir: FileInput = ".") -> builtins.list[Path]:
        """Saves the images or the video of this completed job; returns the paths written."""
        return self._jobs.download(self, path_or_dir)

    def cancel(self) -> Job:
        return self._jobs.cancel(self.id)

    def refresh(self) -> Job:
        return self._jobs.get(self.id)


class Jobs:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def bind(self, data: dict[str, Any]) -> Job:
        job = Job.model_validate(data)
        job._jobs = self
        return job

    def get(self, job_id: str, *, wait: bool = False) -> Job:
        """The job; `wait=True` holds until it is terminal or about 55 s pass."""
        return self._read(f"/jobs/{job_id}", wait)

    def _read(
        self, path: str, wait: bool, timeout: float | None = None, retries: int | None = None
    ) -> Job:
        """A job read at `path` (any job type's own read), long-polled with `wait`."""
        body = self._transport.request(
            "GET",
            path,
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
        for data in self._transport.pages("/jobs", filters, limit, page_size):
            yield self.bind(data)

    def cancel(self, job_id: str) -> Job:
        """Cancels an in-flight job (it comes back `failed`, "Job cancelled"); a terminal job
        comes back unchanged."""
        body = self._transport.request("POST", f"/jobs/{job_id}/cancel")
        return self.bind(body["data"])

    def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Job:
        """Follows the job's event stream (long-polls where the server has none or the stream
        keeps breaking) until it is terminal; see the job's `wait()`."""
        waiting = Waiting(timeout, on_progress)
        job = self._follow_events(job_id, waiting)
        if job is None:
            job = self._long_poll(job_id, waiting)
        return finished(job)

    def _follow_events(self, job_id: str, waiting: Waiting) -> Job | None:
        for _attempt in range(self._transport.retry.max_retries + 1):
            try:
                with self._transport.stream(
                    f"/jobs/{job_id}/events", waiting.stream_headers(), waiting.stream_timeout()
                ) as response:
                    usable = stream_usable(response)
                    if usable is False:
                        return None
                    if usable:
                        decoder = SSEDecoder()
                        for line in response.iter_lines():
                            event = decoder.feed(line)
                            waiting.last_event_id = decoder.last_event_id
                            data = event_job(event.data) if event is not None else None
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

    def _long_poll(self, job_id: str, waiting: Waiting) -> Job:
        while True:
            if waiting.expired():
                raise self._timed_out(job_id, waiting)
            timeout, retries = waiting.poll_limits()
            try:
                job = self._read(f"/jobs/{job_id}", True, timeout, retries)
            except APIConnectionError:
                if waiting.expired():
                    raise self._timed_out(job_id, waiting) from None
                raise
            waiting.seen(job)
            if job.is_terminal:
                return job

    def _timed_out(self, job_id: str, waiting: Waiting) -> JobTimeoutError:
        job = waiting.last_job or self.get(job_id)
        return JobTimeoutError(job, waiting.timeout or 0)

    def save_preview(self, job: JobData, path: FileInput) -> Path | None:
        """Writes the live preview `job` shows (`preview_url`) to `path`, replacing the file at
        once (a viewer never reads half a picture); None when it shows none. A preview the job
        has already replaced is gone from the server: None then too."""
        if not job.preview_url:
            return None
        try:
            response = self._transport.send("GET", job.preview_url, headers={})
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
