"""The pipeline interface: one operation, typed inputs, a progress/cancel handle, media out.

Pipelines know nothing of HTTP, Celery or the database: a worker builds their inputs from a job
row, hands them a `JobControl`, and stores what they return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from PIL import Image


class Cancelled(Exception):
    """Raised from `JobControl.progress` when the job was cancelled; the pipeline just unwinds."""


class JobControl(Protocol):
    def progress(self, fraction: float, message: str | None = None) -> None:
        """Report progress in [0, 1]; raises `Cancelled` when the job has been cancelled."""


@dataclass(frozen=True)
class StyleHints:
    """What a saved brand style lends a generation."""

    palette: tuple[str, ...] = ()
    tone: tuple[str, ...] = ()
    aesthetic: str = ""


@dataclass(frozen=True)
class GenerateInput:
    prompt: str
    width: int
    height: int
    quality: str = "medium"
    variations: int = 1
    seed: int = 0
    references: tuple[Image.Image, ...] = ()
    style: StyleHints | None = None


@dataclass
class ImageOutput:
    images: list[Image.Image]
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class GeneratePipeline(Protocol):
    operation: str

    def run(self, inputs: GenerateInput, control: JobControl) -> ImageOutput: ...
