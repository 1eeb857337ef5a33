"""Progress across a builtin pipeline's named stages, each given a share of its work."""

from __future__ import annotations

from pipelines.base import JobControl


class Stages:
    """Reports progress across a pipeline's named stages, each given a share of the work.

    Every report goes through `control.progress`, which raises `Cancelled` once the job has been
    cancelled, so each stage boundary (and each `within` call) is a cancel point.
    """

    def __init__(self, control: JobControl, weights: dict[str, float]) -> None:
        self.control = control
        total = sum(weights.values())
        self.starts: dict[str, float] = {}
        self.shares: dict[str, float] = {}
        done = 0.0
        for name, weight in weights.items():
            self.starts[name] = done / total
            self.shares[name] = weight / total
            done += weight
        self.current = ""

    def begin(self, name: str) -> None:
        self.current = name
        self.control.progress(self.starts[name], name)

    def within(self, fraction: float) -> None:
        """Progress inside the current stage, `fraction` in [0, 1]."""
        name = self.current
        position = self.starts[name] + self.shares[name] * min(1.0, max(0.0, fraction))
        self.control.progress(position, name)
