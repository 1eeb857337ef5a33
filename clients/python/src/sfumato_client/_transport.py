"""HTTP for the clients: the base URL and key, error answers as exceptions, bounded retries.

Retried: connection errors, 5xx and 429 (waiting `Retry-After` when the server sends one), up to
`max_retries` times with exponential backoff. Creates carry one `Idempotency-Key` across all
their attempts, so a retry after a lost answer returns the job the first attempt created.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx

from sfumato_client.errors import APIConnectionError, APIError, error_from_response

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
# A `wait=true` read is held up to about 55 s by the server.
LONG_POLL_TIMEOUT = 75.0
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
USER_AGENT = "sfumato-client-python/0.1.0"


class RetryPolicy:
    """When to try a request again and how long to wait first."""

    def __init__(self, max_retries: int, max_retry_after: float = 60.0) -> None:
        self.max_retries = max_retries
        # A Retry-After longer than this (a daily cap, say) is raised rather than slept through.
        self.max_retry_after = max_retry_after

    def backoff(self, attempt: int) -> float:
        return float(min(BACKOFF_MAX, BACKOFF_BASE * 2**attempt) * (0.5 + random.random() / 2))

    def delay_after(self, response: httpx.Response, attempt: int, retries: int) -> float | None:
        """Seconds to wait before retrying this answer, or None when it is final."""
        status = response.status_code
        if attempt >= retries or not (status == 429 or status >= 500):
            return None
        retry_after = response.headers.get("retry-after")
        if retry_after is not None:
            try:
                seconds = float(retry_after)
            except ValueError:
                return self.backoff(attempt)
            return seconds if seconds <= self.max_retry_after else None
        return self.backoff(attempt)


class TransportBase:
    def __init__(
        self, base_url: str | None, api_key: str | None, timeout: float, max_retries: int
    ) -> None:
        base_url = base_url or os.environ.get("SFUMATO_API_URL")
        if not base_url:
            raise ValueError("no API URL: pass base_url or set SFUMATO_API_URL (ending in /v1)")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or os.environ.get("SFUMATO_API_KEY")
        self.timeout = timeout
        self.retry = RetryPolicy(max_retries)

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, create: bool) -> dict[str, str]:
        headers = {"User-Agent": USER_AGENT}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if create:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        return headers

    @staticmethod
    def decode(response: httpx.Response) -> Any:
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return response.text

    def error(self, response: httpx.Response) -> APIError:
        return error_from_response(
            response.status_code, self.decode(response), dict(response.headers)
        )


class SyncTransport(TransportBase):
    def __init__(
        self, base_url: str | None, api_key: str | None, timeout: float, max_retries: int
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries)
        self.http = httpx.Client(timeout=timeout, follow_redirects=True)

    def close(self) -> None:
        self.http.close()

    def request(
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
        response = self.send(
            method,
            self.url(path),
            headers=self.headers(create),
            json=json,
            params=params,
            timeout=timeout,
            max_retries=max_retries,
        )
        return self.decode(response)

    def send(
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
                response = self.http.request(
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
                time.sleep(self.retry.backoff(attempt))
                attempt += 1
                continue
            if response.status_code < 400:
                return response
            delay = self.retry.delay_after(response, attempt, retries)
            if delay is None:
                raise self.error(response)
            time.sleep(delay)
            attempt += 1

    @contextmanager
    def stream(
        self, path: str, headers: dict[str, str], timeout: httpx.Timeout
    ) -> Iterator[httpx.Response]:
        with self.http.stream(
            "GET", self.url(path), headers={**self.headers(False), **headers}, timeout=timeout
        ) as response:
            yield response


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
