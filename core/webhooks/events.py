"""The job events a webhook may ask for, and the job as it was at one (what a payload shows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from core.clock import isoformat_ms


class JobEvent(StrEnum):
    STARTED = "started"
    PROGRESS = "progress"
    COMPLETED = "completed"
    FAILED = "failed"


JobEventValue = Literal["started", "progress", "completed", "failed"]
# What a webhook that names no filter is sent: the job's end, either way.
DEFAULT_EVENTS: tuple[JobEventValue, ...] = ("completed", "failed")


@dataclass
class JobSnapshot:
    """The columns a job's answer is made of, as they were at the event (the API's presenter
    takes it as it takes a job row)."""

    id: str
    type: str
    status: str
    created_at: datetime
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    progress: float
    message: str | None
    # Never a live preview: previews are deleted as the job moves on, and a delivery may be
    # sent (or retried) long after its event. Not stored; the presenter reads it as a job's.
    preview_key: str | None = None

    def stored(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "status": self.status,
            "createdAt": isoformat_ms(self.created_at),
            "result": self.result,
            "error": self.error,
            "progress": self.progress,
            "message": self.message,
        }

    @classmethod
    def of_stored(cls, stored: dict[str, Any]) -> JobSnapshot:
        return cls(
            id=stored["id"],
            type=stored["type"],
            status=stored["status"],
            created_at=datetime.fromisoformat(stored["createdAt"]),
            result=stored["result"],
            error=stored["error"],
            progress=stored["progress"],
            message=stored["message"],
        )
