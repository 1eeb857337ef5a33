"""Picks the storage backend from `SFUMATO_STORAGE_URL`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from core.settings import Settings
from core.storage.base import Storage
from core.storage.local import LocalStorage

if TYPE_CHECKING:
    from core.storage.s3 import S3Storage

SUPPORTED = "file://PATH or s3://BUCKET[?endpoint=URL&public_endpoint=URL&region=NAME]"


def storage_from_settings(settings: Settings) -> Storage:
    url = settings.storage_url
    if url is None:
        return LocalStorage(settings.ensure_data_dir() / "media", settings.signing_key())
    if url.startswith("file://"):
        return LocalStorage(Path(url.removeprefix("file://")), settings.signing_key())
    if url.startswith("s3://"):
        return _s3_storage(url)
    raise ValueError(f"unsupported SFUMATO_STORAGE_URL {url!r} (supported: {SUPPORTED})")


def _s3_storage(url: str) -> S3Storage:
    # Imported here: a deployment on local files never loads boto3.
    from core.storage.s3 import S3Storage

    parts = urlsplit(url)
    options = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    unknown = set(options) - {"endpoint", "public_endpoint", "region"}
    if not parts.netloc or parts.path not in ("", "/") or unknown:
        raise ValueError(f"unsupported SFUMATO_STORAGE_URL {url!r} (supported: {SUPPORTED})")
    return S3Storage(
        parts.netloc, options.get("endpoint"), options.get("region"), options.get("public_endpoint")
    )
