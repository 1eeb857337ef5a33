"""Object storage behind one interface: generated media and uploads go through it."""

from core.storage.base import Storage, StorageError
from core.storage.factory import storage_from_settings

__all__ = ["Storage", "StorageError", "storage_from_settings"]
