"""The credentials marker: how the processes of an embedded deployment (one machine, one SQLite
database) tell each other that a key or an account changed."""

from __future__ import annotations

import logging
import mmap
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)


class CredentialsMarker:
    """A file of a few bytes that every process of an embedded deployment maps into memory
    (shared): a credential change writes new random bytes into it, and a process that reads
    bytes other than those it saw last takes that as the event. Every request reads it, so the
    read is a memory read, not a system call (a `stat` per request cost 5-8 us here); writes
    through a shared mapping reach every other mapping of the file at once (one page cache).

    The file's identity is checked at most once a `CHECK_SECONDS`: a marker replaced (an earlier
    release's CLI renamed a new one into place) or removed is mapped afresh, which counts as a
    change. A marker left by an earlier release (an empty file) is grown to size, and each
    change also touches the file's times, which is what an earlier release's gateway watches.
    A process that may not write the file maps it read-only (it cannot publish changes).
    """

    SIZE = 16
    CHECK_SECONDS = 1.0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._next_check = 0.0
        self._identity: tuple[int, int] | None = None
        self._mapping: mmap.mmap | None = None
        self._writable = False
        # While the file cannot be mapped, every read differs from the last: each one is taken
        # as a change, so nothing cached about callers is trusted.
        self._unmapped_reads = 0
        self._map()

    def read(self) -> tuple[object, bytes]:
        """The file's identity and its bytes: another value than the last means a change."""
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + self.CHECK_SECONDS
            self._map_again_if_replaced()
        if self._mapping is None:
            self._unmapped_reads += 1
            return None, self._unmapped_reads.to_bytes(8, "little")
        return self._identity, self._mapping[: self.SIZE]

    def change(self) -> None:
        self._map_again_if_replaced()
        if self._mapping is None or not self._writable:
            raise PermissionError(
                f"{self.path} cannot be written: the deployment's other processes are not told "
                "of this change (make it writable by every process of the deployment)"
            )
        self._mapping[: self.SIZE] = os.urandom(self.SIZE)
        os.utime(self.path)

    def _map_again_if_replaced(self) -> None:
        try:
            status = os.stat(self.path)
            identity: tuple[int, int] | None = (status.st_dev, status.st_ino)
        except OSError:
            identity = None
        if identity != self._identity or self._mapping is None:
            self._map()

    def _map(self) -> None:
        try:
            self._identity, self._mapping, self._writable = self._mapped()
        except OSError as error:
            if self._mapping is not None or self._unmapped_reads == 0:
                log.warning("credentials marker unusable, callers not cached: %s", error)
            self._identity, self._mapping, self._writable = None, None, False

    def _mapped(self) -> tuple[tuple[int, int], mmap.mmap, bool]:
        try:
            # Readable and writable by the deployment's processes as the umask allows.
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            access = mmap.ACCESS_WRITE
        except PermissionError:
            descriptor = os.open(self.path, os.O_RDONLY)
            access = mmap.ACCESS_READ
        try:
            status = os.fstat(descriptor)
            if status.st_size < self.SIZE:
                if access == mmap.ACCESS_READ:
                    raise PermissionError(f"{self.path} must be writable (it is not yet in use)")
                os.ftruncate(descriptor, self.SIZE)  # growing only: a writer's bytes stay
            mapping = mmap.mmap(descriptor, self.SIZE, access=access)
            return (status.st_dev, status.st_ino), mapping, access == mmap.ACCESS_WRITE
        finally:
            os.close(descriptor)
