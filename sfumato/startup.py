"""What every `sfumato` process sets first, and how long it took to start.

Memory: glibc gives each thread that allocates an arena of its own (up to eight per core) and
keeps what it freed there, so large image decodes on many threads (a gateway's thread pool
completing uploads) left their peaks held: twelve concurrent completes of a 49-megapixel PNG
kept 1.8 GB, against 378 MB with two arenas (docs/operations.md). `limit_malloc_arenas` sets
two, before any thread exists, unless `MALLOC_ARENA_MAX` is in the environment (the images and
manifests set it too, for processes that are not this command).

Start-up: `sfumato serve` and `sfumato worker` log the phases (imports, migrations, warm-up) once
ready, as one line (`python -m benchmarks startup` reads it), so an operator sees what a new
replica or pod pays before it serves."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import time

log = logging.getLogger(__name__)
# mallopt's parameter number for the arena count (glibc's malloc.h).
M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """At most `arenas` glibc malloc arenas for this process; False where that cannot be set
    (another C library) or the environment already says (`MALLOC_ARENA_MAX`)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


limit_malloc_arenas()

# When the command began: this module is imported first thing by `sfumato.cli` (the interpreter's
# own start and Typer's import come before it, and are not counted here).
COMMAND_STARTED = time.perf_counter()


class StartupPhases:
    def __init__(self) -> None:
        self._since = COMMAND_STARTED
        self.phases: list[tuple[str, float]] = []

    def end(self, phase: str) -> None:
        """The phase that began where the last one ended is over."""
        now = time.perf_counter()
        self.phases.append((phase, now - self._since))
        self._since = now

    def ready(self, what: str) -> None:
        """The warm-up is over and `what` serves: say how long each phase took."""
        self.end("warm-up")
        total = sum(seconds for _, seconds in self.phases)
        split = ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in self.phases)
        log.info("%s ready in %.2f s (%s)", what, total, split)
