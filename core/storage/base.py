"""The storage interface every backend implements."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable

# Download URLs of the objects answers name, kept per store (a key, its address, its expiry).
REUSED_URLS = 10_000


class StorageError(Exception):
    """The store could not be reached or refused an operation."""


def rounded_expiry(expires_in: int, now: float) -> int:
    """When a download URL asked for at `now` (a Unix time), valid for `expires_in` s, expires:
    rounded up to the next hour, so that every read within the hour gives one URL (and browsers
    cache the file)."""
    return (int(now) + expires_in) // 3600 * 3600 + 3600


class Storage(ABC):
    def __init__(self) -> None:
        self._urls: OrderedDict[tuple[str, str, int, object], str] = OrderedDict()
        self._urls_lock = threading.Lock()
        # The Unix time, whence every expiry is reckoned (a test stops it to compare two URLs
        # signed a second apart without a clock crossing an hour between them).
        self.clock: Callable[[], float] = time.time

    @abstractmethod
    def put_bytes(self, key: str, data: bytes, content_type: str) -> None: ...

    @abstractmethod
    def get_bytes(self, key: str) -> bytes: ...

    @abstractmethod
    def size_of(self, key: str) -> int | None:
        """The object's size in bytes, or None when there is no such object."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove an object; removing one that is not there is not an error."""

    @abstractmethod
    def keys_under(self, prefix: str) -> list[str]:
        """The keys of the objects whose key starts with `prefix` (a folder, ending in `/`)."""

    def url_for(self, key: str, *, base_url: str, expires_in: int) -> str:
        """An absolute URL a browser can GET without an API key, valid for `expires_in` s at
        least (to the next hour). Signed once per object, address and hour, then reused: a job
        polled every second names the same files in every answer."""
        expires, identity = self.url_validity(expires_in)
        reused = (key, base_url, expires, identity)
        url = self._urls.get(reused)
        if url is None:
            url = self._signed_url(key, base_url, expires)
            with self._urls_lock:
                self._urls[reused] = url
                if len(self._urls) > REUSED_URLS:
                    self._urls.popitem(last=False)
        return url

    def url_validity(self, expires_in: int) -> tuple[int, object]:
        """What a download URL asked for now depends on besides its key and address: its expiry
        (rounded, `rounded_expiry`) and the credentials it is signed with."""
        return rounded_expiry(expires_in, self.clock()), self._signing_identity()

    def _signing_identity(self) -> object:
        """What a reused URL must have been signed with besides its expiry: a URL signed with
        other credentials (rotated, or a temporary session's next token) is signed afresh."""
        return None

    @abstractmethod
    def _signed_url(self, key: str, base_url: str, expires: int) -> str:
        """A newly signed download URL of `key`, valid until `expires` (a Unix time)."""

    @abstractmethod
    def upload_url_for(
        self, key: str, *, content_type: str, max_bytes: int, base_url: str, expires_in: int
    ) -> str:
        """An absolute URL that accepts one PUT of the object's bytes without an API key, for
        `expires_in` s, only with `Content-Type: content_type`. Backends that can refuse bodies
        over `max_bytes` at the PUT do; the others leave it to whoever reads the object."""

    @abstractmethod
    def key_from_url(self, url: str) -> str | None:
        """The key of the object `url` names if this store issued it (a GET or upload URL,
        expired or not), else None."""
