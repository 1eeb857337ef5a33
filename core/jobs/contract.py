"""What a job is, as every layer names it: its status, type, queue and operation; the inputs of
each operation and each kind of result, as stored in the job's row; and the bounds of what a
create may ask for (SPEC.md), shared by the API's request bodies and the core requests of
`core/jobs/creation.py`.

The gateway builds inputs (through `core/jobs/creation.py`), `core/prices.price_of` prices them,
the worker validates them (`GenerateJobInputs.model_validate(job.inputs)`) and builds results,
the presenter shows results. A row stores them as JSON with the camelCase keys it has always had
(each model's aliases); `stored()` gives that JSON.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel


class JobStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


IN_FLIGHT = (JobStatus.PENDING, JobStatus.PROCESSING)
TERMINAL = (JobStatus.COMPLETED, JobStatus.FAILED)
# A completed job's notes (what its pipeline said) are kept one a line in `Job.message`; a note
# may itself hold "; ".
NOTES_SEPARATOR = "\n"


def image_folder(job_id: str) -> str:
    """Where a job's images (and nothing else) are stored."""
    return f"images/{job_id}/"


def video_folder(job_id: str) -> str:
    """Where a job's video and its poster (and nothing else) are stored."""
    return f"videos/{job_id}/"


def preview_folder(job_id: str) -> str:
    """Where the live previews of a job in progress are stored (`previews/<job>/<n>.jpg`, n
    counting up); emptied when the job ends."""
    return f"previews/{job_id}/"


def preview_number(key: str) -> int:
    """The `n` of a preview's key: which preview of its job it is."""
    return int(key.rsplit("/", 1)[-1].split(".", 1)[0])


class JobType(StrEnum):
    """What the API calls a job (`type`): an edit, resize and upscale are all `image.edit`."""

    IMAGE_GENERATE = "image.generate"
    IMAGE_EDIT = "image.edit"
    VIDEO_GENERATE = "video.generate"
    STYLE_EXTRACT = "style.extract"


IMAGE_TYPES = (JobType.IMAGE_GENERATE, JobType.IMAGE_EDIT)
# What `GET /jobs` lists: image jobs, and video jobs when asked (CONTRACT.md); never styles.
LISTED_TYPES = (*IMAGE_TYPES, JobType.VIDEO_GENERATE)


# The enums' values as Literal types, made from the enums (the one declaration of each value): a
# field typed by one validates and documents exactly those strings (a list in the OpenAPI
# document). Type checkers see plain strings.
if TYPE_CHECKING:
    JobStatusValue = str
    JobTypeValue = str
    ListedJobTypeValue = str
else:
    JobStatusValue = Literal[tuple(status.value for status in JobStatus)]
    JobTypeValue = Literal[tuple(kind.value for kind in JobType)]
    ListedJobTypeValue = Literal[tuple(kind.value for kind in LISTED_TYPES)]


class Queue(StrEnum):
    """The worker pools, which scale independently."""

    IMAGE = "image"
    VIDEO = "video"
    STYLE = "style"


QUEUES = tuple(Queue)
# The queues whose jobs count against a plan's in-flight and daily limits.
GENERATION_QUEUES = (Queue.IMAGE, Queue.VIDEO)


class Operation(StrEnum):
    """What a worker does: one pipeline (or the style extraction) per operation."""

    GENERATE = "generate"
    EDIT = "edit"
    REFRAME = "reframe"
    UPSCALE = "upscale"
    ANIMATE = "animate"
    TRANSITION = "transition"
    EXTRACT_STYLE = "extract_style"


QUEUE_OF_OPERATION = {
    Operation.GENERATE: Queue.IMAGE,
    Operation.EDIT: Queue.IMAGE,
    Operation.REFRAME: Queue.IMAGE,
    Operation.UPSCALE: Queue.IMAGE,
    Operation.ANIMATE: Queue.VIDEO,
    Operation.TRANSITION: Queue.VIDEO,
    Operation.EXTRACT_STYLE: Queue.STYLE,
}
JOB_TYPE_OF_OPERATION = {
    Operation.GENERATE: JobType.IMAGE_GENERATE,
    Operation.EDIT: JobType.IMAGE_EDIT,
    Operation.REFRAME: JobType.IMAGE_EDIT,
    Operation.UPSCALE: JobType.IMAGE_EDIT,
    Operation.ANIMATE: JobType.VIDEO_GENERATE,
    Operation.TRANSITION: JobType.VIDEO_GENERATE,
    Operation.EXTRACT_STYLE: JobType.STYLE_EXTRACT,
}

# The bounds of a create (SPEC.md).
UUIDString = Annotated[
    str,
    StringConstraints(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    ),
    Field(json_schema_extra={"format": "uuid"}),
]
Prompt = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
NegativePrompt = Annotated[str, StringConstraints(max_length=1000)]
# An input image: an upload, image or job id, or a URL (SPEC.md "Reference image").
ImageReference = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
# The page a style is extracted from.
PageUrl = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
References = Annotated[list[ImageReference], Field(max_length=4)]
Variations = Annotated[int, Field(ge=1, le=4)]
GenerateAspectRatio = Literal["1:1", "3:2", "2:3", "4:3", "3:4", "4:5", "5:4", "16:9", "9:16"]
ResizeAspectRatio = Literal[
    "1:1", "1:4", "1:8", "2:3", "3:2", "3:4", "4:1", "4:3", "4:5", "5:4", "8:1", "9:16", "16:9",
    "21:9",
]  # fmt: skip
Quality = Literal["low", "medium", "high"]
ImageResolution = Literal["1K", "2K", "4K"]
VideoResolution = Literal["480p", "720p"]
FramesAspectRatio = Literal["16:9", "9:16", "4:3", "3:4", "1:1", "21:9", "auto"]
AnimateDuration = Annotated[float, Field(ge=1, le=15)]
FramesDuration = Annotated[float, Field(ge=4, le=15)]
# Steering (extensions, issue 33). A seed picks the noise: the same seed and inputs on the same
# pipeline, model and hardware make the same output.
SEED_MAX = 2**32 - 1
Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]
# Loose outer bounds; each model's own range (the model catalogue) is checked at create time.
Steps = Annotated[int, Field(ge=1, le=200)]
Guidance = Annotated[float, Field(ge=0, le=50)]
ModelId = Annotated[str, StringConstraints(min_length=1, max_length=100)]
AdapterName = Annotated[str, StringConstraints(min_length=1, max_length=100)]
AdapterScale = Annotated[float, Field(ge=0, le=2)]
MAX_ADAPTERS = 4


def at_default(model: BaseModel, names: frozenset[str]) -> set[str]:
    """Which of the fields `names` hold their default: extensions a dump leaves out, so that
    what was written before they existed is written (and hashed) as it always was."""
    fields = type(model).model_fields
    return {
        name
        for name in names
        if getattr(model, name) == fields[name].get_default(call_default_factory=True)
    }


class Stored(BaseModel):
    """A part of a job row's JSON: Python names, the stored camelCase keys as aliases. Fields
    added later (`EXTENSIONS`) are stored only when set, so older rows round-trip unchanged."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    EXTENSIONS: ClassVar[frozenset[str]] = frozenset()

    def stored(self) -> dict[str, Any]:
        return self.model_dump(
            mode="json", by_alias=True, exclude=at_default(self, self.EXTENSIONS)
        )


# Inputs: what a worker needs, resolved at create time (images already in our storage).


class InputImage(Stored):
    """An input image in our storage (an upload, a generated image or a fetched reference)."""

    media_id: str
    key: str
    content_type: str
    width: int
    height: int


class LentStyle(Stored):
    """What a saved style lends a generation, copied into its inputs so that the job stands
    alone if the style changes later."""

    style_id: str
    palette: list[str]
    tone: list[str]
    aesthetic: str


class AppliedAdapter(Stored):
    """A LoRA adapter a generation applies, and at what scale."""

    name: str
    scale: float


class GenerateJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.GENERATE

    prompt: str
    aspect_ratio: GenerateAspectRatio
    quality: Quality
    resolution: ImageResolution
    variations: Variations
    width: int
    height: int
    style_id: str | None = None
    style: LentStyle | None = None
    references: list[InputImage] = Field(default_factory=list)
    # Steering (extensions); absent: the pipeline's defaults. The seed is the row's own.
    model: str | None = None
    negative_prompt: str | None = None
    steps: int | None = None
    guidance: float | None = None
    loras: list[AppliedAdapter] = Field(default_factory=list)

    EXTENSIONS = frozenset({"model", "negative_prompt", "steps", "guidance", "loras"})


class EditJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.EDIT

    image_id: str
    source: InputImage
    prompt: str
    width: int
    height: int
    # The resolution class nearest the source's area (what an edit is priced by).
    resolution: ImageResolution
    style_id: str | None = None
    style: LentStyle | None = None
    references: list[InputImage] = Field(default_factory=list)
    model: str | None = None
    negative_prompt: str | None = None
    steps: int | None = None
    guidance: float | None = None
    loras: list[AppliedAdapter] = Field(default_factory=list)
    # White: repaint; black: keep (the source's size).
    mask: InputImage | None = None

    EXTENSIONS = frozenset({"model", "negative_prompt", "steps", "guidance", "loras", "mask"})


class ReframeJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.REFRAME

    image_id: str
    source: InputImage
    aspect_ratio: ResizeAspectRatio
    resolution: ImageResolution
    width: int
    height: int


class UpscaleJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.UPSCALE

    image_id: str
    source: InputImage
    resolution: ImageResolution
    width: int
    height: int


class AnimateJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.ANIMATE

    image: InputImage
    prompt: str
    negative_prompt: str | None = None
    duration: float
    resolution: VideoResolution
    audio: bool
    width: int
    height: int


class TransitionJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.TRANSITION

    start_image: InputImage
    end_image: InputImage
    prompt: str
    negative_prompt: str | None = None
    duration: float
    aspect_ratio: FramesAspectRatio
    resolution: VideoResolution
    audio: bool
    width: int
    height: int


class ExtractStyleJobInputs(Stored):
    operation: ClassVar[Operation] = Operation.EXTRACT_STYLE

    url: str
    # Save a second style rather than update the account's style of the same site.
    as_new: bool = False

    EXTENSIONS = frozenset({"as_new"})


JobInputs = (
    GenerateJobInputs
    | EditJobInputs
    | ReframeJobInputs
    | UpscaleJobInputs
    | AnimateJobInputs
    | TransitionJobInputs
    | ExtractStyleJobInputs
)
INPUTS_OF_OPERATION: dict[Operation, type[JobInputs]] = {
    inputs.operation: inputs
    for inputs in (
        GenerateJobInputs,
        EditJobInputs,
        ReframeJobInputs,
        UpscaleJobInputs,
        AnimateJobInputs,
        TransitionJobInputs,
        ExtractStyleJobInputs,
    )
}


def inputs_of(operation: str, stored: dict[str, Any]) -> JobInputs:
    """A row's inputs, validated as its operation's model (raises pydantic's ValidationError)."""
    return INPUTS_OF_OPERATION[Operation(operation)].model_validate(stored)


# Results: what a completed job made, as storage keys (the presenter signs their URLs).


class StoredImage(Stored):
    id: str
    key: str
    width: int
    height: int


class StoredVideo(Stored):
    id: str
    key: str
    duration_seconds: float
    width: int
    height: int
    # The poster is made just after the job completes; None until then.
    thumbnail_key: str | None = None


class SavedStyleRef(Stored):
    id: str


class ImagesResult(Stored):
    images: list[StoredImage]
    # The seed the job ran with (given or drawn): image i of variations used its derivation.
    seed: int | None = None
    # The model that made it (an id of GET /v1/models).
    model: str | None = None

    EXTENSIONS = frozenset({"seed", "model"})


class VideoResult(Stored):
    video: StoredVideo
    seed: int | None = None

    EXTENSIONS = frozenset({"seed"})


class StyleResult(Stored):
    style: SavedStyleRef


StoredResult = ImagesResult | VideoResult | StyleResult
RESULT_OF_TYPE: dict[JobType, type[StoredResult]] = {
    JobType.IMAGE_GENERATE: ImagesResult,
    JobType.IMAGE_EDIT: ImagesResult,
    JobType.VIDEO_GENERATE: VideoResult,
    JobType.STYLE_EXTRACT: StyleResult,
}


def result_of(job_type: str, stored: dict[str, Any]) -> StoredResult:
    """A completed row's result, validated as its job type's kind."""
    return RESULT_OF_TYPE[JobType(job_type)].model_validate(stored)
