# Generated from sfumato_client/_async/client.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""The client: the resources of the API over one connection pool."""

from __future__ import annotations

from types import TracebackType

from sfumato_client._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from sfumato_client._sync.account import Account
from sfumato_client._sync.images import Images
from sfumato_client._sync.jobs import Jobs
from sfumato_client._sync.models import Models
from sfumato_client._sync.styles import Styles
from sfumato_client._sync.transport import Transport
from sfumato_client._sync.uploads import Uploads
from sfumato_client._sync.videos import Videos
from sfumato_client._sync.webhooks import Webhooks


class Client:
    """The API. `base_url` (ending in `/v1`) and `api_key` default to `SFUMATO_API_URL` and
    `SFUMATO_API_KEY`; `max_retries` bounds the retries of a request (connection errors, 5xx,
    429), 0 to disable them. Close it, or use it as a context manager."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self._transport = Transport(base_url, api_key, timeout, max_retries)
        self.base_url = self._transport.base_url
        self.jobs = Jobs(self._transport)
        self.uploads = Uploads(self._transport)
        self.images = Images(self._transport, self.jobs, self.uploads)
        self.videos = Videos(self._transport, self.jobs, self.uploads)
        self.styles = Styles(self._transport, self.jobs, self.uploads)
        self.account = Account(self._transport)
        self.models = Models(self._transport)
        self.webhooks = Webhooks(self._transport)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
