"""Files under the data directory, served by the gateway itself at signed `/files/...` URLs."""

from __future__ import annotations

import hashlib
import hmac
import os
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from core.storage.base import Storage, StorageError

FILES_ROUTE = "/files"


class LocalStorage(Storage):
    def __init__(self, root: Path, signing_key: bytes) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._signing_key = signing_key

    def path_of(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root):
            raise StorageError(f"key outside the store: {key!r}")
        return path

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        path = self.path_of(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write then rename, so a reader never sees half a file and a full disk leaves none.
            handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".part-")
            try:
                with os.fdopen(handle, "wb") as temp_file:
                    temp_file.write(data)
                os.replace(temp_name, path)
            except BaseException:
                Path(temp_name).unlink(missing_ok=True)
                raise
        except OSError as error:
            raise StorageError(f"cannot store {key}: {error}") from error

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.path_of(key).read_bytes()
        except OSError as error:
            raise StorageError(f"cannot read {key}: {error}") from error

    def delete(self, key: str) -> None:
        self.path_of(key).unlink(missing_ok=True)

    def signature(self, method: str, key: str, expires: int) -> str:
        message = f"{method}\n{key}\n{expires}".encode()
        return hmac.new(self._signing_key, message, hashlib.sha256).hexdigest()

    def verify(self, method: str, key: str, expires: int, signature: str) -> bool:
        if expires < time.time():
            return False
        return hmac.compare_digest(self.signature(method, key, expires), signature)

    def url_for(self, key: str, *, base_url: str, expires_in: int) -> str:
        # Rounded to the hour so repeated reads of one job give one URL (and browser caching).
        expires = (int(time.time()) + expires_in) // 3600 * 3600 + 3600
        query = urlencode({"expires": expires, "signature": self.signature("GET", key, expires)})
        return f"{base_url.rstrip('/')}{FILES_ROUTE}/{quote(key)}?{query}"
