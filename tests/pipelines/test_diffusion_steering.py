"""Steering the diffusion pipelines (issue 33) on the tiny random-weight models, through HTTP:
the model list with each model's ranges, steps, guidance and negative prompts reaching the
diffusers call, refusals naming the model's range, the same seed making the same PNG on the CPU,
a job naming the builtin model on a diffusion deployment, batches kept apart by steps, and a
masked edit changing only the mask's white."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from models.cache import ModelCache
from models.registry import load_registry
from pipelines.base import EditInput
from pipelines.diffusion.edit import DiffusionEdit
from tests.conftest import COMMON_ENV
from tests.support import diffusion_images
from tests.support.control import RecordingControl
from tests.support.http_jobs import create, wait_done
from tests.support.service import Mode, Service, running_service

pytestmark = pytest.mark.slow

PIPELINES = (
    "generate=tests.support.diffusion_images:SteerableGenerate,"
    "edit=pipelines.diffusion.edit:DiffusionEdit"
)


@pytest.fixture(scope="module")
def diffusion(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tiny_registry = diffusion_images.tiny_registry_path()
    previous = os.environ.get("SFUMATO_MODELS_FILE")
    os.environ["SFUMATO_MODELS_FILE"] = str(tiny_registry)
    data_dir = tmp_path_factory.mktemp("steering")
    config_file = data_dir / "config.toml"
    config_file.write_text(
        Path(COMMON_ENV["SFUMATO_CONFIG_FILE"]).read_text()
        # Long enough a window that jobs created together surely meet.
        + "\n[queues.image]\nconcurrency = 4\nbatch_window_ms = 1000\n"
    )
    env = {
        **COMMON_ENV,
        "SFUMATO_PIPELINES": PIPELINES,
        "SFUMATO_CONFIG_FILE": str(config_file),
        "SFUMATO_MODELS_FILE": str(tiny_registry),
    }
    try:
        with running_service(Mode("embedded", env, separate_workers=False), data_dir) as service:
            yield service
    finally:
        if previous is None:
            os.environ.pop("SFUMATO_MODELS_FILE", None)
        else:
            os.environ["SFUMATO_MODELS_FILE"] = previous


def completed(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == 202, response.text
    job = wait_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    return job


def png_of(job: dict[str, Any]) -> bytes:
    return httpx.get(job["result"]["images"][0]["url"]).content


def test_the_models_list_gives_each_diffusion_models_ranges(diffusion: Service) -> None:
    with diffusion.client(diffusion.new_key()) as client:
        listed = client.get("/models", params={"operation": "generate"}).json()["data"]
    assert [(model["id"], model["kind"], model["default"]) for model in listed] == [
        ("sd15", "diffusion", True),
        ("builtin", "builtin", False),
    ]
    tiny = listed[0]
    # The sd15 family's 10..100 steps, widened to the 2 steps this entry runs; guidance 1..20.
    assert tiny["steps"] == {"min": 2, "max": 100, "default": 2}
    assert tiny["guidance"] == {"min": 1, "max": 20, "default": 7.5}
    assert tiny["negativePrompt"] is True
    assert tiny["loras"] == ["tiny-lora"]


def test_steps_guidance_and_the_negative_prompt_reach_the_call(diffusion: Service) -> None:
    marker = f"steered-{time.monotonic_ns()}"
    with diffusion.client(diffusion.new_key()) as client:
        job = completed(
            client,
            "/images/generate",
            {"prompt": marker, "steps": 3, "guidance": 2.5, "negativePrompt": "blurry"},
        )
        refused = client.post(
            "/images/generate", json={"prompt": marker, "steps": 1, "guidance": 0.5}
        )
        unknown = client.post("/images/generate", json={"prompt": marker, "model": "sdxl"})
    call = diffusion_images.calls_with(marker)[-1]
    assert (call.steps, call.guidance, call.negative_prompts) == (3, 2.5, ["blurry"])
    assert call.steps_run == 3
    assert job["result"]["model"] == "sd15"
    assert refused.status_code == 400
    assert refused.json()["error"]["details"] == {
        "steps": "must be within 2..100 for the model sd15",
        "guidance": "must be within 1..20 for the model sd15",
    }
    assert unknown.json()["error"]["details"] == {
        "model": "not served here; the models for generate are: sd15, builtin"
    }


def test_a_seed_makes_the_same_png_on_the_cpu(diffusion: Service) -> None:
    body = {"prompt": "a red barn", "seed": 4_000_000_000}
    with diffusion.client(diffusion.new_key()) as client:
        first = completed(client, "/images/generate", body)
        again = completed(client, "/images/generate", body)
        other = completed(client, "/images/generate", {**body, "seed": 5})
    assert first["result"]["seed"] == again["result"]["seed"] == 4_000_000_000
    assert png_of(first) == png_of(again)
    assert png_of(other) != png_of(first)


def test_a_lora_adapter_changes_the_picture_and_at_scale_0_changes_nothing(
    diffusion: Service,
) -> None:
    body = {"prompt": "a red barn", "seed": 31}
    lora = {"name": "tiny-lora", "scale": 1.0}
    with diffusion.client(diffusion.new_key()) as client:
        plain = completed(client, "/images/generate", body)
        adapted = completed(client, "/images/generate", {**body, "loras": [lora]})
        at_zero = completed(client, "/images/generate", {**body, "loras": [{**lora, "scale": 0}]})
        after = completed(client, "/images/generate", body)
        source = adapted["result"]["images"][0]["id"]
        unfit = client.post(
            "/images/edit", json={"imageId": source, "prompt": "snow", "loras": [lora]}
        )
    assert "LoRA tiny-lora at scale 1" in adapted["notes"]
    assert png_of(adapted) != png_of(plain)
    assert png_of(at_zero) == png_of(plain)
    # Loaded once and kept, the adapter is off again for a job without it.
    assert png_of(after) == png_of(plain)
    assert unfit.status_code == 400
    assert unfit.json()["error"]["details"] == {
        "loras[0].name": "no adapter 'tiny-lora' fits the model pix2pix (installed for it: none)"
    }


def test_a_job_naming_the_builtin_model_runs_the_builtin_painter(diffusion: Service) -> None:
    marker = f"builtin-{time.monotonic_ns()}"
    with diffusion.client(diffusion.new_key()) as client:
        job = completed(
            client, "/images/generate", {"prompt": f"{marker} a lake", "model": "builtin"}
        )
    assert job["result"]["model"] == "builtin"
    assert any(note.startswith("builtin procedural painter") for note in job["notes"])
    assert diffusion_images.calls_with(marker) == []


def test_jobs_with_other_steps_are_not_batched_together(diffusion: Service) -> None:
    marker = f"batch-steps-{time.monotonic_ns()}"
    bodies = [{"prompt": f"{marker} {index}", "steps": 3} for index in range(2)]
    bodies.append({"prompt": f"{marker} other", "steps": 4})
    with diffusion.client(diffusion.new_key()) as client:
        with ThreadPoolExecutor(3) as pool:
            jobs = list(pool.map(lambda body: create(client, **body)["id"], bodies))
        done = [wait_done(client, job) for job in jobs]
    assert all(job["status"] == "completed" for job in done), done
    calls = diffusion_images.calls_with(marker)
    assert sorted((call.images, call.steps) for call in calls) == [(1, 4), (2, 3)], calls


def test_a_masked_diffusion_edit_changes_only_the_white_of_the_mask(diffusion: Service) -> None:
    with diffusion.client(diffusion.new_key()) as client:
        source = completed(client, "/images/generate", {"prompt": "a harbour", "seed": 9})
        width = source["result"]["images"][0]["width"]
        height = source["result"]["images"][0]["height"]
        mask = Image.new("L", (width, height), 0)
        mask.paste(255, (0, 0, width // 2, height))
        buffer = io.BytesIO()
        mask.save(buffer, format="PNG")
        presigned = client.post(
            "/uploads", json={"filename": "mask.png", "contentType": "image/png"}
        ).json()["data"]
        httpx.put(
            presigned["uploadUrl"],
            content=buffer.getvalue(),
            headers={"Content-Type": "image/png"},
        ).raise_for_status()
        client.post(f"/uploads/{presigned['uploadId']}/complete").raise_for_status()
        edited = completed(
            client,
            "/images/edit",
            {"imageId": source["id"], "prompt": "make it snowy", "mask": presigned["uploadId"]},
        )
    assert "applied inside the mask only" in edited["notes"]
    before = np.asarray(Image.open(io.BytesIO(png_of(source))).convert("RGB"), np.int16)
    after = np.asarray(Image.open(io.BytesIO(png_of(edited))).convert("RGB"), np.int16)
    assert np.array_equal(after[:, width // 2 :], before[:, width // 2 :])
    assert not np.array_equal(after[:, : width // 2], before[:, : width // 2])


def test_a_masked_edit_of_an_image_to_image_model_inpaints_through_its_twin() -> None:
    """The tiny SD 1.5 as an edit entry (image-to-image, not an instruction class): a mask
    sends the call to its inpainting twin (`mask_image`), and only the white changes."""
    registry = load_registry(diffusion_images.tiny_registry_path())
    spec = registry.spec("generate").model_copy(update={"operation": "edit"})
    edit = RecordingEdit(spec, ModelCache(device="cpu"))
    source = Image.fromarray(np.random.default_rng(3).integers(0, 255, (64, 96, 3), dtype=np.uint8))
    mask = Image.new("L", source.size, 0)
    mask.paste(255, (0, 0, 48, 64))
    masked = edit.run(
        EditInput(prompt="snow", source=source, seed=2, mask=mask), RecordingControl()
    )
    assert edit.classes == ["StableDiffusionInpaintPipeline"]
    assert masked.notes[0].startswith("sfumato/tiny-sd15: inpainting the mask at 0.6")
    pixels = np.asarray(masked.images[0].convert("RGB"))
    assert np.array_equal(pixels[:, 48:], np.asarray(source)[:, 48:])
    assert not np.array_equal(pixels[:, :48], np.asarray(source)[:, :48])
    edit.run(EditInput(prompt="snow", source=source, seed=2), RecordingControl())
    assert edit.classes[-1] == "StableDiffusionImg2ImgPipeline"


class RecordingEdit(DiffusionEdit):
    """The real edit, remembering which diffusers class each call ran and with what mask."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.classes: list[str] = []

    def invoke(self, pipe: Any, arguments: dict[str, Any]) -> Any:
        self.classes.append(type(pipe).__name__)
        assert ("mask_image" in arguments) == (type(pipe).__name__.endswith("InpaintPipeline"))
        return super().invoke(pipe, arguments)
