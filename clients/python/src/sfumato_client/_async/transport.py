"""The HTTP calls of a client: one connection pool, each request under the retry policy
(`sfumato_client._http`), the event stream, and listings followed page after page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from sfumato_client._http import MAX_PAGE_SIZE, TransportBase, page_params
from sfumato_client.errors import APIConnectionError


class AsyncTransport(TransportBase):
    def __init__(
        self, base_url: str | None, api_key: str | None, timeout: float, max_retries: int
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries)
        self.http = httpx.AsyncClient(timeout=timeout, follow_redirects=True)

    async def close(self) -> None:
        await self.http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        create: bool = False,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> Any:
        """An API call (path under the base URL) answering the decoded JSON body."""
        response = await self.send(
            method,
            self.url(path),
            headers=self.headers(create),
            json=json,
            params=params,
            timeout=timeout,
            max_retries=max_retries,
        )
        return self.decode(response)

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str],
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> httpx.Response:
        """One request with the retry policy; raises the error family on a final failure."""
        retries = self.retry.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            try:
                response = await self.http.request(
                    method,
                    url,
                    headers=headers,
                    json=json,
                    params=params,
                    content=content,
                    timeout=timeout or self.timeout,
                )
            except httpx.TransportError as exc:
                if attempt >= retries:
                    raise APIConnectionError(f"{method} {url}: {exc!r}") from exc
                await asyncio.sleep(self.retry.backoff(attempt))
                attempt += 1
                continue
            if response.status_code < 400:
                return response
            delay = self.retry.delay_after(response, attempt, retries)
            if delay is None:
                raise self.error(response)
            await asyncio.sleep(delay)
            attempt += 1

    @asynccontextmanager
    async def stream(
        self, path: str, headers: dict[str, str], timeout: httpx.Timeout
    ) -> AsyncIterator[httpx.Response]:
        async with self.http.stream(
            "GET", self.url(path), headers={**self.headers(False), **headers}, timeout=timeout
        ) as response:
            yield response

    async def pages(
        self,
        path: str,
        filters: dict[str, Any],
        limit: int | None,
        page_size: int = MAX_PAGE_SIZE,
    ) -> AsyncIterator[dict[str, Any]]:
        """The items of a listing's every page (`page_size` a request, following
        `nextCursor`), at most `limit` of them (all when None)."""
        cursor: str | None = None
        yielded = 0
        while True:
            params = page_params(filters, limit, page_size, yielded, cursor)
            page = await self.request("GET", path, params=params)
            for item in page["data"]:
                yield item
                yielded += 1
                if limit is not None and yielded >= limit:
                    return
            cursor = page.get("nextCursor")
            if not cursor:
                return
