"""The storage interface every backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod


class StorageError(Exception):
    """The store could not be reached or refused an operation."""


class Storage(ABC):
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

    @abstractmethod
    def url_for(self, key: str, *, base_url: str, expires_in: int) -> str:
        """An absolute URL a browser can GET without an API key, valid for `expires_in` s."""

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
