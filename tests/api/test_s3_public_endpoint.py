"""S3 storage with a public endpoint (deploy/compose.yaml): the service talks to the store by
one address, and presigns the URLs it hands out for the address clients reach it at."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from core.settings import Settings
from core.storage.factory import storage_from_settings
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
