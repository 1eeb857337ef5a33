"""What both transports share, none of it I/O: the base URL and key, the headers, decoded
answers and error answers as exceptions, when to retry, and the query of a listing's pages.

Retried: connection errors, 5xx and 429 (waiting `Retry-After` when the server sends one), up to
`max_retries` times with exponential backoff. Creates carry one `Idempotency-Key` across all
their attempts, so a retry after a lost answer returns the job the first attempt created.
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

import httpx

from sfumato_client.errors import APIError, error_from_response

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
# A `wait=true` read is held up to about 55 s by the server.
LONG_POLL_TIMEOUT = 75.0
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
USER_AGENT = "sfumato-client-python/0.1.0"
MAX_PAGE_SIZE = 50


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


def page_params(
    filters: dict[str, Any], limit: int | None, page_size: int, yielded: int, cursor: str | None
) -> dict[str, Any]:
    """The query of the next page of a listing: its filters, `page_size` items (fewer when
    `limit` is near), from `cursor`."""
    if limit is not None:
        page_size = max(1, min(page_size, limit - yielded))
    params = {name: value for name, value in filters.items() if value is not None}
    params["limit"] = page_size
    if cursor is not None:
        params["cursor"] = cursor
    return params
