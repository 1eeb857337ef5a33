"""How long a process took to start, phase by phase: imports, migrations, warm-up. `sfumato
serve` and `sfumato worker` log it once ready, as one line (`python -m benchmarks startup` reads
it), so an operator sees what a new replica or pod pays before it serves."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)

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
