"""What the style tests share: the fixture sites and their loopback server, a test fetcher, the
session's headless Chromium and the brand image check the worker uses (fixtures in conftest.py),
and readers of an extraction's answer."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import pytest

from core.settings import Settings
from pipelines.styles import Browser, Extraction, Fetcher, find_chromium, shared_browser
from workers.style_extraction import brand_image_type


@dataclass(frozen=True)
class _Document:
    url: str
    content_type: str | None
    body: bytes


@contextmanager
def loopback_fetcher(base_url: str) -> Iterator[Fetcher]:
    """Test-only fetcher: follows redirects, refuses anything but the loopback fixture server."""
    allowed = urlsplit(base_url).netloc
    with httpx.Client(follow_redirects=True, timeout=5) as client:

        def fetch(url: str) -> _Document:
            if urlsplit(url).netloc != allowed:
                raise ConnectionRefusedError(f"{url} is outside the fixture server")
            response = client.get(url)
            response.raise_for_status()
            return _Document(
                str(response.url), response.headers.get("content-type"), response.content
            )

        yield fetch


# The worker's check of brand images (`core.images`), as the extraction's `ImageCheck`.
image_type = functools.partial(brand_image_type, max_pixels=Settings().max_image_pixels)


def session_browser() -> Iterator[Browser]:
    """The process's browser, the one the embedded services of the tests render in too. Without
    Chromium the browser tests are skipped, except in CI (`.ci/run` installs it), where that is
    a failure."""
    executable = find_chromium("")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed; .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    browser = shared_browser(executable, Settings().style_render_memory_mb)
    yield browser
    browser.close()


def is_png(data: bytes) -> bool:
    return data.startswith(b"\x89PNG\r\n\x1a\n")


def colours_by_role(extraction: Extraction) -> dict[str, str]:
    return {c["role"]: c["hex"] for c in extraction.style["colours"] if c["type"] == "solid"}


def fonts_by_role(extraction: Extraction) -> dict[str, dict[str, object]]:
    return {item["role"]: item for item in extraction.style["typography"]}
