"""The one way an answer names a stored file: an absolute URL, signed for a while (local storage:
HMAC over the key and the expiry, served at `/files`; S3: presigned), for the request's base URL."""

from __future__ import annotations

from core.storage import Storage


class UrlSigner:
    def __init__(self, storage: Storage, base_url: str, expires_in: int) -> None:
        self.storage = storage
        self.base_url = base_url
        self.expires_in = expires_in

    def url(self, key: str) -> str:
        return self.storage.url_for(key, base_url=self.base_url, expires_in=self.expires_in)

    def validity(self) -> tuple[int, object]:
        """What the URLs it gives now depend on besides their keys and its address (an answer
        naming them may be kept while this stays the same)."""
        return self.storage.url_validity(self.expires_in)
