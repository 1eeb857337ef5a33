"""The pipeline interface: one operation, typed inputs, a progress/cancel handle, media out.

Pipelines know nothing of HTTP, Celery or the database: a worker builds their inputs from a job
row, hands them a `JobControl`, and stores what they return. Each of the seven operations has
its input type and its protocol here (`GeneratePipeline` ... `ExtractStylePipeline`);
`pipelines/registry.py` says which class serves each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from PIL import Image

if TYPE_CHECKING:
    from pipelines.styles import Browser, Extraction, Fetcher, ImageCheck, RenderBudget


class Cancelled(Exception):
    """Raised from `JobControl.progress` when the job was cancelled; the pipeline just unwinds."""


class OutOfDeviceMemory(MemoryError):
    """The GPU ran out of memory even after the pipeline freed what it could and tried again (a
    batch split in half, a video call retried once)."""


class JobControl(Protocol):
    def progress(self, fraction: float, message: str | None = None) -> None:
        """Report how much of the pipeline's own work is done, in [0, 1] (the runner places it
        within the job's progress); raises `Cancelled` when the job has been cancelled."""


@runtime_checkable
class PreviewControl(Protocol):
    """A `JobControl` that also shows live previews (the worker's): a pipeline asks
    `wants_preview` (cheap, at every step) and only then makes the picture for `preview` (at
    most 256 px is shown). Other controls have no previews."""

    def wants_preview(self) -> bool: ...

    def preview(self, image: Image.Image) -> None: ...


def wants_preview(control: JobControl) -> bool:
    """Whether `control` shows previews and would show one now."""
    return isinstance(control, PreviewControl) and control.wants_preview()


def offer_preview(control: JobControl, picture: Callable[[], Image.Image]) -> None:
    """Show an intermediate stage's picture as the job's live preview, when its control shows
    previews and wants one now (only then is `picture` called to make it)."""
    if isinstance(control, PreviewControl) and control.wants_preview():
        control.preview(picture())


class NoControl:
    """The control of a run no job stands behind (a smoke test, a benchmark, a gallery): its
    progress goes nowhere and nothing cancels it."""

    def progress(self, fraction: float, message: str | None = None) -> None:
        return None


@runtime_checkable
class Pipeline(Protocol):
    """What every operation's pipeline has, whatever its inputs: the operation it serves and
    `run`. The protocols below say what each operation's `run` takes and returns."""

    operation: str

    def run(self, inputs: Any, control: JobControl) -> Any: ...


@runtime_checkable
class WarmsUp(Protocol):
    """A pipeline with work to do before its first job (compiling its model for the shapes it
    will run: models/tuning.py); `warm_up` returns what it did, for the worker's start-up log."""

    def warm_up(self) -> list[str]: ...


@dataclass(frozen=True)
class StyleHints:
    """What a saved brand style lends a generation."""

    palette: tuple[str, ...] = ()
    tone: tuple[str, ...] = ()
    aesthetic: str = ""


@dataclass(frozen=True)
class Adapter:
    """A LoRA adapter to apply (installed for the model), at `scale`."""

    name: str
    scale: float = 1.0


@dataclass(frozen=True)
class GenerateInput:
    """Image `i` of `variations` uses its own seed, derived from `seed` (docs/api.md)."""

    prompt: str
    width: int
    height: int
    quality: str = "medium"
    variations: int = 1
    seed: int = 0
    references: tuple[Image.Image, ...] = ()
    style: StyleHints | None = None
    # Steering (None: the model's defaults for `quality`); a pipeline that cannot use one of
    # these says so in its notes.
    negative_prompt: str | None = None
    steps: int | None = None
    guidance: float | None = None
    adapters: tuple[Adapter, ...] = ()


@dataclass
class ImageOutput:
    images: list[Image.Image]
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class GeneratePipeline(Protocol):
    operation: str

    def run(self, inputs: GenerateInput, control: JobControl) -> ImageOutput: ...


@dataclass(frozen=True)
class EditInput:
    """Change `source` as `prompt` instructs (not a new picture); `references` may lend a look."""

    prompt: str
    source: Image.Image
    seed: int = 0
    references: tuple[Image.Image, ...] = ()
    style: StyleHints | None = None
    negative_prompt: str | None = None
    steps: int | None = None
    guidance: float | None = None
    adapters: tuple[Adapter, ...] = ()
    # The area to change, the source's size: white (255) changes, black keeps.
    mask: Image.Image | None = None


@runtime_checkable
class EditPipeline(Protocol):
    operation: str

    def run(self, inputs: EditInput, control: JobControl) -> ImageOutput: ...


@dataclass(frozen=True)
class ReframeInput:
    """Show `source` at a new aspect ratio and size, extending the scene into the new area."""

    source: Image.Image
    width: int
    height: int
    seed: int = 0


@runtime_checkable
class ReframePipeline(Protocol):
    operation: str

    def run(self, inputs: ReframeInput, control: JobControl) -> ImageOutput: ...


@dataclass(frozen=True)
class UpscaleInput:
    """Enlarge `source` to exactly `width` x `height` (its aspect ratio, up to rounding)."""

    source: Image.Image
    width: int
    height: int
    seed: int = 0


@runtime_checkable
class UpscalePipeline(Protocol):
    operation: str

    def run(self, inputs: UpscaleInput, control: JobControl) -> ImageOutput: ...


@dataclass(frozen=True)
class VideoOutput:
    """A finished clip on disk (frames are streamed to the encoder, never held in memory)."""

    path: str
    width: int
    height: int
    frame_count: int
    duration_seconds: float
    has_audio: bool
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AnimateInput:
    """Image-to-video: `image` is the first frame; the prompt chooses motion and ambience."""

    image: Image.Image
    prompt: str
    duration: float
    width: int
    height: int
    audio: bool = True
    negative_prompt: str | None = None
    seed: int = 0
    output_path: str = ""


@runtime_checkable
class AnimatePipeline(Protocol):
    operation: str

    def run(self, inputs: AnimateInput, control: JobControl) -> VideoOutput: ...


@dataclass(frozen=True)
class TransitionInput:
    """A real in-between from `start` to `end` (not a cross-fade)."""

    start: Image.Image
    end: Image.Image
    prompt: str
    duration: float
    width: int
    height: int
    audio: bool = True
    negative_prompt: str | None = None
    seed: int = 0
    output_path: str = ""


@runtime_checkable
class TransitionPipeline(Protocol):
    operation: str

    def run(self, inputs: TransitionInput, control: JobControl) -> VideoOutput: ...


@dataclass(frozen=True)
class ExtractStyleInput:
    """Read a brand style from the website at `url`; every document it needs comes through
    `fetcher` (the worker's, with the project's fetch policy): the pipeline opens no
    connection itself. Brand images are kept only when `check` names their real type. The
    worker lends its `browser` (None: read the page as text) and the `budget` a render gets."""

    url: str
    fetcher: Fetcher
    check: ImageCheck
    browser: Browser | None = None
    budget: RenderBudget | None = None


@runtime_checkable
class ExtractStylePipeline(Protocol):
    operation: str

    def run(self, inputs: ExtractStyleInput, control: JobControl) -> Extraction: ...
