"""`Client` and `AsyncClient`: the resources of the API over one connection pool."""

from __future__ import annotations

from types import TracebackType

from sfumato_client._transport import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AsyncTransport,
    SyncTransport,
)
from sfumato_client.resources.account import Account, AsyncAccount
from sfumato_client.resources.images import AsyncImages, Images
from sfumato_client.resources.jobs import AsyncJobs, Jobs
from sfumato_client.resources.styles import AsyncStyles, Styles
from sfumato_client.resources.uploads import AsyncUploads, Uploads
from sfumato_client.resources.videos import AsyncVideos, Videos


class Client:
    """The API, synchronously. `base_url` (ending in `/v1`) and `api_key` default to
    `SFUMATO_API_URL` and `SFUMATO_API_KEY`; `max_retries` bounds the retries of a request
    (connection errors, 5xx, 429), 0 to disable them."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self._transport = SyncTransport(base_url, api_key, timeout, max_retries)
        self.base_url = self._transport.base_url
        self.jobs = Jobs(self._transport)
        self.uploads = Uploads(self._transport)
        self.images = Images(self._transport, self.jobs, self.uploads)
        self.videos = Videos(self._transport, self.jobs, self.uploads)
        self.styles = Styles(self._transport, self.jobs, self.uploads)
        self.account = Account(self._transport)

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


class AsyncClient:
    """The API with asyncio, method for method as `Client`; use it as `async with`."""

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
