"""The client: the resources of the API over one connection pool."""

from __future__ import annotations

from types import TracebackType

from sfumato_client._async.account import AsyncAccount
from sfumato_client._async.images import AsyncImages
from sfumato_client._async.jobs import AsyncJobs
from sfumato_client._async.models import AsyncModels
from sfumato_client._async.styles import AsyncStyles
from sfumato_client._async.transport import AsyncTransport
from sfumato_client._async.uploads import AsyncUploads
from sfumato_client._async.videos import AsyncVideos
from sfumato_client._async.webhooks import AsyncWebhooks
from sfumato_client._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT


class AsyncClient:
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
        self._transport = AsyncTransport(base_url, api_key, timeout, max_retries)
        self.base_url = self._transport.base_url
        self.jobs = AsyncJobs(self._transport)
        self.uploads = AsyncUploads(self._transport)
        self.images = AsyncImages(self._transport, self.jobs, self.uploads)
        self.videos = AsyncVideos(self._transport, self.jobs, self.uploads)
        self.styles = AsyncStyles(self._transport, self.jobs, self.uploads)
        self.account = AsyncAccount(self._transport)
        self.models = AsyncModels(self._transport)
        self.webhooks = AsyncWebhooks(self._transport)

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
