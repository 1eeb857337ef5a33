"""The diffusion image pipelines on tiny random-weight models: HTTP create to stored media.

The tiny models (models/testing.py) are built once per session; the real diffusers classes
load and run them on the CPU. The service is embedded (its workers are threads of this
process), so the steerable generate's record of pipeline calls is visible here.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from benchmarks.testkit.waits import wait_until
from tests.conftest import COMMON_ENV
from tests.support import diffusion_images
from tests.support.fleet import sample_value
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.service import Mode, Service, running_service

pytestmark = pytest.mark.slow

DIFFUSION_PIPELINES = (
    "generate=tests.support.diffusion_images:SteerableGenerate,"
    "edit=pipelines.diffusion.edit:DiffusionEdit,"
    "reframe=pipelines.diffusion.reframe:DiffusionReframe,"
    "upscale=pipelines.diffusion.upscale:DiffusionUpscale"
)


@pytest.fixture(scope="module")
def diffusion(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tiny_registry = diffusion_images.tiny_registry_path()
    # The pipelines read the registry from the environment (they import nothing of core).
    previous = os.environ.get("SFUMATO_MODELS_FILE")
    os.environ["SFUMATO_MODELS_FILE"] = str(tiny_registry)
    data_dir = tmp_path_factory.mktemp("diffusion")
    config_file = data_dir / "config.toml"
    config_file.write_text(
        Path(COMMON_ENV["SFUMATO_CONFIG_FILE"]).read_text()
        # One batch of four and a job of another size at once; a window long enough that four
        # jobs created together surely meet (a batch that fills up starts at once, so only
        # lone jobs wait this long).
        + "\n[queues.image]\nconcurrency = 5\nbatch_window_ms = 1000\n"
    )
    env = {
        **COMMON_ENV,
        "SFUMATO_PIPELINES": DIFFUSION_PIPELINES,
        "SFUMATO_CONFIG_FILE": str(config_file),
        "SFUMATO_LEASE_SECONDS": "5",
    }
    try:
        with running_service(Mode("embedded", env, separate_workers=False), data_dir) as service:
            yield service
    finally:
        if previous is None:
            os.environ.pop("SFUMATO_MODELS_FILE", None)
        else:
            os.environ["SFUMATO_MODELS_FILE"] = previous


def decoded(url: str) -> Image.Image:
    response = httpx.get(url)
    assert response.status_code == 200
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "PNG"
    return image


def completed(client: httpx.Client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 202, response.text
    job = wait_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    return job


def test_every_image_operation_runs_its_diffusion_pipeline_to_stored_media(
    diffusion: Service,
) -> None:
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        generated = completed(
            client,
            "/images/generate",
            {"prompt": "a lighthouse at dusk", "aspectRatio": "16:9", "variations": 2},
        )
        images = generated["result"]["images"]
        assert [(i["width"], i["height"]) for i in images] == [(1360, 768)] * 2
        assert all(decoded(i["url"]).size == (1360, 768) for i in images)
        assert diffusion_images.calls_with("a lighthouse at dusk")[-1].images == 2

        edited = completed(
            client, "/images/edit", {"imageId": generated["id"], "prompt": "make it snowy"}
        )
        image = edited["result"]["images"][0]
        assert decoded(image["url"]).size == (image["width"], image["height"]) == (1360, 768)

        square = completed(client, "/images/generate", {"prompt": "a red barn"})
        source_id = square["result"]["images"][0]["id"]
        reframed = completed(
            client, "/images/resize", {"imageId": source_id, "aspectRatio": "21:9"}
        )
        image = reframed["result"]["images"][0]
        assert decoded(image["url"]).size == (image["width"], image["height"]) == (1568, 672)
        # The source stays as it was in the middle (the seam blend only touches the new area).
        source = np.asarray(decoded(square["result"]["images"][0]["url"]).convert("RGB"))
        middle = np.asarray(decoded(image["url"]).convert("RGB"))[:, 784 - 200 : 784 + 200]
        expected = np.asarray(Image.fromarray(source).resize((672, 672), Image.Resampling.LANCZOS))
        assert np.abs(middle.astype(int) - expected[:, 136:536].astype(int)).mean() < 3

        upscaled = completed(client, "/images/upscale", {"imageId": source_id, "resolution": "2K"})
        image = upscaled["result"]["images"][0]
        assert decoded(image["url"]).size == (image["width"], image["height"]) == (2048, 2048)


def test_four_compatible_jobs_share_one_call_and_an_incompatible_one_runs_alone(
    diffusion: Service,
) -> None:
    key = diffusion.new_key()
    marker = f"batch-{time.monotonic_ns()}"
    with diffusion.client(key) as client:
        bodies = [{"prompt": f"{marker} picture {index}"} for index in range(4)]
        bodies.append({"prompt": f"{marker} wide", "aspectRatio": "16:9"})
        with ThreadPoolExecutor(5) as pool:
            jobs = list(pool.map(lambda body: create(client, **body)["id"], bodies))
        done = [wait_done(client, job) for job in jobs]
    assert all(job["status"] == "completed" for job in done), done
    calls = diffusion_images.calls_with(marker)
    assert sorted(call.images for call in calls) == [1, 4], calls
    alone = next(call for call in calls if call.images == 1)
    assert alone.prompts == [f"{marker} wide"]
    # One call, yet each job its own seed and its own picture.
    urls = [job["result"]["images"][0]["url"] for job in done[:4]]
    pixels = [np.asarray(decoded(url)) for url in urls]
    assert all(not np.array_equal(pixels[0], other) for other in pixels[1:])


def test_cancel_mid_steps_stops_the_call(diffusion: Service) -> None:
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        job = create(client, "[slow] a long night", quality="high")
        wait_until(
            lambda: any(c.steps_run >= 2 for c in diffusion_images.calls_with("[slow]")),
            60,
            "two denoising steps",
        )
        assert client.post(f"/jobs/{job['id']}/cancel").status_code == 200
        wait_until(lambda: status_of(client, job["id"]) == "failed", 20, "cancelled")
        call = diffusion_images.calls_with("[slow] a long night")[-1]
        assert call.over.wait(20), "the diffusers call never ended"
        assert call.steps_run < 12, "the denoising loop stopped before its last step"
        settled = client.get(f"/jobs/{job['id']}").json()["data"]
        assert settled["error"]["message"] == "Job cancelled"


def test_out_of_memory_splits_the_batch_and_retries_once(diffusion: Service) -> None:
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        job = completed(
            client, "/images/generate", {"prompt": "[oom>1] two foxes", "variations": 2}
        )
        assert len(job["result"]["images"]) == 2
        calls = diffusion_images.calls_with("[oom>1] two foxes")
        assert [(c.images, c.out_of_memory) for c in calls] == [(2, True), (1, False), (1, False)]

        before = diffusion.balance(key)
        failed = wait_done(client, create(client, "[oom] never fits", variations=2)["id"])
    assert failed["status"] == "failed"
    assert "GPU ran out of memory" in failed["error"]["message"]
    assert "refunded" in failed["error"]["message"]
    assert [c.images for c in diffusion_images.calls_with("[oom] never fits")] == [2, 1]
    assert diffusion.balance(key) == before


def test_the_worker_reports_its_batches_and_model_cache_lookups(diffusion: Service) -> None:
    """The runner feeds the batcher's calls and the model cache's lookups to the metrics an
    embedded gateway serves (a worker serves them on its probe port)."""
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        wait_done(client, create(client, f"metrics-{time.monotonic_ns()}")["id"])
    text = httpx.get(f"{diffusion.metrics_url}/metrics").text
    assert sample_value(text, "sfumato_batch_size_count", pipeline="generate") >= 1
    assert sample_value(text, "sfumato_model_cache_lookups_total", result="hit") >= 1
