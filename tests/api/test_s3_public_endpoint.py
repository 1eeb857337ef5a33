"""S3 storage with a public endpoint (deploy/compose.yaml): the service talks to the store by
one address, and presigns the URLs it hands out for the address clients reach it at."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from core.settings import Settings
from core.storage.factory import storage_from_settings
from core.storage.s3 import TEMPORARY_REUSE_SECONDS
from tests.support.s3 import s3_server


def test_presigned_urls_name_the_public_endpoint_and_still_work() -> None:
    with s3_server() as storage_url:
        inside = urlsplit(storage_url.partition("endpoint=")[2])
        # The same server by another name, as the host sees a container's published port.
        public = f"http://localhost:{inside.port}"
        storage = storage_from_settings(
            Settings(storage_url=f"{storage_url}&public_endpoint={public}")
        )
        storage.put_bytes("images/a.png", b"png bytes", "image/png")
        url = storage.url_for("images/a.png", base_url="http://gateway/", expires_in=60)
        assert url.startswith(f"{public}/")
        assert httpx.get(url).content == b"png bytes"
        assert storage.key_from_url(url) == "images/a.png"
        upload = storage.upload_url_for(
            "staging/b",
            content_type="image/png",
            max_bytes=10,
            base_url="http://gateway/",
            expires_in=60,
        )
        assert upload.startswith(f"{public}/")
        assert httpx.put(upload, content=b"up", headers={"content-type": "image/png"}).is_success
        # The service's own calls go to the inside endpoint.
        assert storage.get_bytes("staging/b") == b"up"


def test_presigned_download_urls_are_reused_within_the_hour_and_last_as_asked() -> None:
    with s3_server() as storage_url:
        storage = storage_from_settings(Settings(storage_url=storage_url))
        storage.put_bytes("images/c.png", b"png bytes", "image/png")
        # The store's clock stopped at the start of this hour, then moved by hand: two reads a
        # second apart never straddle an hour (boto3 itself signs each second's date anew).
        real = time.time()
        stopped = [real - real % 3600 + 1]
        storage.clock = lambda: stopped[0]
        urls = []
        for _ in range(2):
            urls.append(storage.url_for("images/c.png", base_url="http://gateway/", expires_in=600))
            stopped[0] += 1.1
            # The presigner's own date moves on too: without reuse, a second URL would differ.
            time.sleep(1.1)
        assert urls[0] == urls[1]
        lasts = int(parse_qs(urlsplit(urls[0]).query)["X-Amz-Expires"][0])
        assert 600 <= lasts <= 600 + 3600
        assert httpx.get(urls[0]).content == b"png bytes"
        # SigV4 allows a week at most: a longer setting is cut to it, not refused by the store.
        week = storage.url_for("images/c.png", base_url="http://gateway/", expires_in=7 * 86400)
        assert int(parse_qs(urlsplit(week).query)["X-Amz-Expires"][0]) <= 7 * 86400
        assert httpx.get(week).content == b"png bytes"


def test_a_url_signed_with_a_temporary_token_is_reused_only_with_that_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A presigned URL dies with the session token it was signed with: reuse is keyed on the
    credentials (and, for a token, on a 5-minute span, within botocore's renewal margin)."""
    with s3_server() as storage_url:
        monkeypatch.setenv("AWS_SESSION_TOKEN", "first-token")
        first = storage_from_settings(Settings(storage_url=storage_url))
        assert first._signing_identity() == (
            "sfumato-test",
            "first-token",
            int(time.time()) // TEMPORARY_REUSE_SECONDS,
        )
        monkeypatch.setenv("AWS_SESSION_TOKEN", "next-token")
        assert storage_from_settings(Settings(storage_url=storage_url))._signing_identity() != (
            first._signing_identity()
        )
        monkeypatch.delenv("AWS_SESSION_TOKEN")
        assert storage_from_settings(Settings(storage_url=storage_url))._signing_identity() == (
            "sfumato-test"
        )
