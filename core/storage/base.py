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
    def delete(self, key: str) -> None:
        """Remove an object; removing one that is not there is not an error."""

    @abstractmethod
    def url_for(self, key: str, *, base_url: str, expires_in: int) -> str:
        """An absolute URL a browser can GET without an API key, valid for `expires_in` s."""
