"""What the resources that start jobs share: the create call (with its automatic
Idempotency-Key) and the typed read of a job."""

from __future__ import annotations

from sfumato_client._transport import LONG_POLL_TIMEOUT, AsyncTransport, SyncTransport
from sfumato_client.models import RequestBody
from sfumato_client.resources.jobs import AsyncJob, AsyncJobs, Job, Jobs
from sfumato_client.resources.uploads import AsyncUploads, Uploads


class SyncCreates:
    def __init__(self, transport: SyncTransport, jobs: Jobs, uploads: Uploads) -> None:
        self._transport = transport
        self._jobs = jobs
        self._uploads = uploads

    def _create(self, path: str, body: RequestBody) -> Job:
        answer = self._transport.request("POST", path, json=body.wire(), create=True)
        return self._jobs.bind(answer["data"])

    def _read(self, path: str, wait: bool) -> Job:
        answer = self._transport.request(
            "GET",
            path,
            params={"wait": "true"} if wait else None,
            timeout=LONG_POLL_TIMEOUT if wait else None,
        )
        return self._jobs.bind(answer["data"])


class AsyncCreates:
    def __init__(self, transport: AsyncTransport, jobs: AsyncJobs, uploads: AsyncUploads) -> None:
        self._transport = transport
        self._jobs = jobs
        self._uploads = uploads

    async def _create(self, path: str, body: RequestBody) -> AsyncJob:
        answer = await self._transport.request("POST", path, json=body.wire(), create=True)
        return self._jobs.bind(answer["data"])

    async def _read(self, path: str, wait: bool) -> AsyncJob:
        answer = await self._transport.request(
            "GET",
            path,
            params={"wait": "true"} if wait else None,
            timeout=LONG_POLL_TIMEOUT if wait else None,
        )
        return self._jobs.bind(answer["data"])
