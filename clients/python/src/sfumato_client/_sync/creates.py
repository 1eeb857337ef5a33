# Generated from sfumato_client/_async/creates.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""What the resources that start jobs share: the create call (with its automatic
Idempotency-Key) and the typed read of a job."""

from __future__ import annotations

from sfumato_client._sync.jobs import Job, Jobs
from sfumato_client._sync.transport import Transport
from sfumato_client._sync.uploads import Uploads
from sfumato_client.models import RequestBody


class Creates:
    def __init__(self, transport: Transport, jobs: Jobs, uploads: Uploads) -> None:
        self._transport = transport
        self._jobs = jobs
        self._uploads = uploads

    def _create(self, path: str, body: RequestBody) -> Job:
        answer = self._transport.request("POST", path, json=body.wire(), create=True)
        return self._jobs.bind(answer["data"])

    def _read(self, path: str, wait: bool) -> Job:
        return self._jobs._read(path, wait)
