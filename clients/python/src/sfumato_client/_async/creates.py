"""What the resources that start jobs share: the create call (with its automatic
Idempotency-Key) and the typed read of a job."""

from __future__ import annotations

from sfumato_client._async.jobs import AsyncJob, AsyncJobs
from sfumato_client._async.transport import AsyncTransport
from sfumato_client._async.uploads import AsyncUploads
from sfumato_client.models import RequestBody


class AsyncCreates:
    def __init__(self, transport: AsyncTransport, jobs: AsyncJobs, uploads: AsyncUploads) -> None:
        self._transport = transport
        self._jobs = jobs
        self._uploads = uploads

    async def _create(self, path: str, body: RequestBody) -> AsyncJob:
        answer = await self._transport.request("POST", path, json=body.wire(), create=True)
        return self._jobs.bind(answer["data"])

    async def _read(self, path: str, wait: bool) -> AsyncJob:
        return await self._jobs._read(path, wait)
