"""A pipeline's `JobControl` for tests: records every progress report and cancels on request."""

from __future__ import annotations

from pipelines.base import Cancelled


class RecordingControl:
    """Records `(fraction, message)` for each report; raises `Cancelled` on every report when
    `cancelled`, on the report after the first `cancel_after` ones, or on the first report of a
    fraction above `cancel_above`."""

    def __init__(
        self,
        cancel_after: int | None = None,
        cancelled: bool = False,
        cancel_above: float | None = None,
    ) -> None:
        self.calls: list[tuple[float, str | None]] = []
        self.cancel_after = 0 if cancelled else cancel_after
        self.cancel_above = cancel_above

    @property
    def fractions(self) -> list[float]:
        return [fraction for fraction, _ in self.calls]

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.calls.append((fraction, message))
        if self.cancel_after is not None and len(self.calls) > self.cancel_after:
            raise Cancelled
        if self.cancel_above is not None and fraction > self.cancel_above:
            raise Cancelled
