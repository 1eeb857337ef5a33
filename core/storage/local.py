"""Files under the data directory, served by the gateway itself at signed `/files/...` URLs.

GET URLs are signed over (method, key, expiry); upload URLs also bind the declared content type
and the maximum size, which the gateway's PUT route enforces while streaming.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from core.storage.base import Storage, StorageError

FILES_ROUTE = "/files"


class LocalStorage(Storage):
    def __init__(self, root: Path, signing_key: bytes) -> None:
        super().__init__()
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._signing_key = signing_key

    def path_of(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root):
            raise StorageError(f"key outside the store: {key!r}")
        return path

    @contextmanager
    def writer(self, key: str) -> Iterator[BinaryIO]:
        """A file to write the object into; it appears under `key` only if the block ends
        without an exception (temp file + rename: readers never see half a file), and only once
        it is on disk: the bytes are synced before the rename and the folder's entry after it,
        so the commit that names the file (a job's completion) cannot reach the disk before the
        file does, whatever a power loss cuts (docs/operations.md "Power loss")."""
        path = self.path_of(key)
        try:
            made = self._folders_for(path.parent)
            handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        except OSError as error:
            raise StorageError(f"cannot store {key}: {error}") from error
        try:
            with os.fdopen(handle, "wb") as temp_file:
                yield temp_file
                temp_file.flush()
                os.fsync(temp_file.fileno())
            os.replace(temp_name, path)
            for folder in (path.parent, *made):
                _sync_folder(folder)
        except OSError as error:
            raise StorageError(f"cannot store {key}: {error}") from error
        finally:
            Path(temp_name).unlink(missing_ok=True)

    def _folders_for(self, folder: Path) -> list[Path]:
        """Make `folder` and the folders above it that are missing; the folders whose entries
        changed (each made one's parent), to be synced with the file."""
        missing = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for made in reversed(missing):
            made.mkdir(exist_ok=True)
        return [made.parent for made in missing]

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        with self.writer(key) as handle:
            handle.write(data)

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.path_of(key).read_bytes()
        except OSError as error:
            raise StorageError(f"cannot read {key}: {error}") from error

    def size_of(self, key: str) -> int | None:
        path = self.path_of(key)
        return path.stat().st_size if path.is_file() else None

    def delete(self, key: str) -> None:
        self.path_of(key).unlink(missing_ok=True)

    def keys_under(self, prefix: str) -> list[str]:
        folder = self.path_of(prefix)
        if not folder.is_dir():
            return []
        return sorted(
            path.relative_to(self.root).as_posix()
            for path in folder.rglob("*")
            if path.is_file() and not path.name.startswith(".part-")
        )

    def signature(self, method: str, key: str, expires: int, *bound: str) -> str:
        message = "\n".join((method, key, str(expires), *bound)).encode()
        return hmac.new(self._signing_key, message, hashlib.sha256).hexdigest()

    def verify(self, method: str, key: str, expires: int, signature: str, *bound: str) -> bool:
        if expires < self.clock():
            return False
        expected = self.signature(method, key, expires, *bound)
        return hmac.compare_digest(expected.encode(), signature.encode())

    def _signed_url(self, key: str, base_url: str, expires: int) -> str:
        query = urlencode({"expires": expires, "signature": self.signature("GET", key, expires)})
        return f"{base_url.rstrip('/')}{FILES_ROUTE}/{quote(key)}?{query}"

    def upload_url_for(
        self, key: str, *, content_type: str, max_bytes: int, base_url: str, expires_in: int
    ) -> str:
        expires = int(self.clock()) + expires_in
        signature = self.signature("PUT", key, expires, content_type, str(max_bytes))
        query = urlencode(
            {
                "expires": expires,
                "contentType": content_type,
                "maxBytes": max_bytes,
                "signature": signature,
            }
        )
        return f"{base_url.rstrip('/')}{FILES_ROUTE}/{quote(key)}?{query}"

    def key_from_url(self, url: str) -> str | None:
        # Any host: the signature, not the address, proves the URL is ours.
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        if not parts.path.startswith(FILES_ROUTE + "/"):
            return None
        key = unquote(parts.path[len(FILES_ROUTE) + 1 :])
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        expires, signature = query.get("expires", ""), query.get("signature", "")
        if not expires.isdigit():
            return None
        if "contentType" in query:
            bound = (query["contentType"], query.get("maxBytes", ""))
            expected = self.signature("PUT", key, int(expires), *bound)
        else:
            expected = self.signature("GET", key, int(expires))
        return key if hmac.compare_digest(expected.encode(), signature.encode()) else None


def _sync_folder(folder: Path) -> None:
    """A folder's entries to disk (a rename or a new name in it survives a power loss)."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
