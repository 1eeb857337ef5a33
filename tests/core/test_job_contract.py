"""The typed job contract (core/jobs/contract.py): rows written before it validate and are
written back unchanged, prices follow the typed inputs, and the runner's progress scaling."""

from __future__ import annotations

from typing import Any

import pytest

from core.jobs.contract import (
    QUEUE_OF_OPERATION,
    QUEUES,
    ImagesResult,
    JobType,
    Operation,
    Queue,
    StyleResult,
    VideoResult,
    inputs_of,
    result_of,
)
from core.prices import price_of
from core.service_config import load_config
from pipelines.base import Cancelled
from tests.support.control import RecordingControl
from workers.progress import PIPELINE_SHARE, PipelineProgress

IMAGE = {
    "mediaId": "m1",
    "key": "uploads/m1.png",
    "contentType": "image/png",
    "width": 640,
    "height": 480,
}
STYLE = {"styleId": "s1", "palette": ["#112233"], "tone": ["calm"], "aesthetic": "quiet"}
# Inputs exactly as the gateway stored them before the contract was typed.
STORED_INPUTS: dict[str, dict[str, Any]] = {
    "generate": {
        "prompt": "a calm sea",
        "aspectRatio": "16:9",
        "quality": "high",
        "resolution": "2K",
        "variations": 2,
        "width": 2720,
        "height": 1536,
        "styleId": "s1",
        "style": STYLE,
        "references": [IMAGE],
    },
    "edit": {
        "imageId": "j1",
        "prompt": "warmer",
        "styleId": None,
        "style": None,
        "references": [],
        "width": 640,
        "height": 480,
        "resolution": "1K",
        "source": IMAGE,
    },
    "reframe": {
        "imageId": "j1",
        "aspectRatio": "21:9",
        "resolution": "1K",
        "width": 1568,
        "height": 672,
        "source": IMAGE,
    },
    "upscale": {
        "imageId": "j1",
        "resolution": "4K",
        "width": 4720,
        "height": 3552,
        "source": IMAGE,
    },
    "animate": {
        "image": IMAGE,
        "prompt": "waves",
        "negativePrompt": None,
        "duration": 6.5,
        "resolution": "720p",
        "audio": True,
        "width": 960,
        "height": 720,
    },
    "transition": {
        "startImage": IMAGE,
        "endImage": IMAGE,
        "prompt": "dusk",
        "negativePrompt": "blur",
        "duration": 4,
        "aspectRatio": "auto",
        "resolution": "480p",
        "audio": False,
        "width": 640,
        "height": 480,
    },
    "extract_style": {"url": "https://example.com/"},
}


@pytest.mark.parametrize("operation", list(STORED_INPUTS))
def test_stored_inputs_validate_and_are_written_back_unchanged(operation: str) -> None:
    inputs = inputs_of(operation, STORED_INPUTS[operation])
    assert inputs.operation == operation
    assert inputs.stored() == STORED_INPUTS[operation]


def test_inputs_from_before_styles_and_references_still_validate() -> None:
    older = {key: value for key, value in STORED_INPUTS["generate"].items()}
    for added_later in ("styleId", "style", "references"):
        del older[added_later]
    inputs = inputs_of("generate", older)
    assert inputs.stored() == {**older, "styleId": None, "style": None, "references": []}


def test_stored_results_validate_and_are_written_back_unchanged() -> None:
    images = {"images": [{"id": "i1", "key": "images/j/i1.png", "width": 64, "height": 64}]}
    video = {
        "video": {
            "id": "v1",
            "key": "videos/j/v1.mp4",
            "durationSeconds": 6.0,
            "width": 960,
            "height": 720,
            "thumbnailKey": None,
        }
    }
    style = {"style": {"id": "s1"}}
    for job_type, stored, kind in (
        ("image.generate", images, ImagesResult),
        ("image.edit", images, ImagesResult),
        ("video.generate", video, VideoResult),
        ("style.extract", style, StyleResult),
    ):
        result = result_of(job_type, stored)
        assert isinstance(result, kind)
        assert result.stored() == stored


def test_every_operation_has_a_queue_and_the_enums_are_the_stored_strings() -> None:
    assert set(QUEUE_OF_OPERATION) == set(Operation)
    assert QUEUES == ("image", "video", "style") and Queue.VIDEO == "video"
    assert f"{JobType.IMAGE_EDIT}" == "image.edit"


def test_prices_of_typed_inputs_follow_the_default_table() -> None:
    prices = load_config().prices
    priced = {
        operation: price_of(prices, inputs_of(operation, stored))
        for operation, stored in STORED_INPUTS.items()
    }
    # generate: high (4) x 2K (2) x 2 variations; edit 1K: 2; reframe 1K: 2; upscale 4K: 4;
    # animate 720p: 4 per second, 6.5 s rounded up; transition 480p: 3 x 4 s; extraction: 5.
    assert priced == {
        "generate": 16,
        "edit": 2,
        "reframe": 2,
        "upscale": 4,
        "animate": 26,
        "transition": 12,
        "extract_style": 5,
    }


def test_a_pipelines_progress_is_the_first_ninety_percent_of_the_jobs() -> None:
    job = RecordingControl()
    control = PipelineProgress(job)
    control.progress(0.0)
    control.progress(0.5, "halfway")
    control.progress(1.0, "done")
    assert job.calls == [(0.0, None), (0.5 * PIPELINE_SHARE, "halfway"), (PIPELINE_SHARE, "done")]
    assert PIPELINE_SHARE == 0.9


def test_a_cancel_raises_through_the_pipelines_control() -> None:
    with pytest.raises(Cancelled):
        PipelineProgress(RecordingControl(cancelled=True)).progress(0.3)
