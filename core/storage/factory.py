"""Picks the storage backend from `SFUMATO_STORAGE_URL`."""

from __future__ import annotations

from pathlib import Path

from core.settings import Settings
from core.storage.base import Storage
from core.storage.local import LocalStorage


def storage_from_settings(settings: Settings) -> Storage:
    url = settings.storage_url
    if url is None:
        return LocalStorage(settings.ensure_data_dir() / "media", settings.signing_key())
    if url.startswith("file://"):
        return LocalStorage(Path(url.removeprefix("file://")), settings.signing_key())
    raise ValueError(f"unsupported SFUMATO_STORAGE_URL {url!r} (supported: file://PATH)")
