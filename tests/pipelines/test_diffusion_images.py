"""The diffusion image pipelines on tiny random-weight models: HTTP create to stored media.

The tiny models (models/testing.py) are built once per session; the real diffusers classes
load and run them on the CPU. The service is embedded (its workers are threads of this
process), so the steerable generate's record of pipeline calls is visible here.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from benchmarks.testkit.processes import REPO
from benchmarks.testkit.waits import wait_until
from sfumato_client import Client
from tests.conftest import COMMON_ENV
from tests.support import diffusion_images
from tests.support.fleet import sample_value
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.job_events import events_of, sse_lines, stream
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
        # A live preview about every other step of a `[slow]` call (0.25 s a step).
        "SFUMATO_PREVIEW_SECONDS": "0.4",
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


def test_out_of_memory_splits_the_batch_into_halves_and_never_wedges_the_worker(
    diffusion: Service,
) -> None:
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        job = completed(
            client, "/images/generate", {"prompt": "[oom>1] four foxes", "variations": 4}
        )
        assert len(job["result"]["images"]) == 4
        calls = diffusion_images.calls_with("[oom>1] four foxes")
        assert [(c.images, c.out_of_memory) for c in calls] == [
            (4, True),
            (2, True),
            (1, False),
            (1, False),
            (2, True),
            (1, False),
            (1, False),
        ]

        before = diffusion.balance(key)
        failed = wait_done(client, create(client, "[oom] never fits", variations=2)["id"])
        assert failed["status"] == "failed"
        assert failed["error"]["message"] == (
            "The GPU ran out of memory (one image does not fit in the GPU's memory); "
            "the credits were refunded"
        )
        assert [c.images for c in diffusion_images.calls_with("[oom] never fits")] == [2, 1]
        assert diffusion.balance(key) == before
        # The same worker takes the next job as if nothing had happened.
        after = completed(client, "/images/generate", {"prompt": "a fox after the storm"})
        assert len(after["result"]["images"]) == 1


def _jpeg_at_most_256(data: bytes) -> None:
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG"
    assert max(image.size) <= 256


def test_a_job_shows_its_live_preview_while_it_denoises_and_none_once_done(
    diffusion: Service,
) -> None:
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        job = create(client, "[slow] a harbour at dawn", quality="high")
        previews: dict[str, int] = {}  # URL -> status of its fetch, made as soon as it was seen
        with stream(client, job["id"]) as response:
            for event in events_of(sse_lines(response)):
                shown = event.job
                if "previewUrl" in shown:
                    assert shown["status"] == "processing"
                    number = re.search(r"/previews/[0-9a-f-]+/(\d+)\.jpg", shown["previewUrl"])
                    assert number, shown["previewUrl"]
                    # The event's id names the preview it shows, so a reconnect sees a new one.
                    assert event.id == f"processing/{round(shown['progress'] * 1000)}/{number[1]}"
                    if shown["previewUrl"] not in previews:
                        fetched = httpx.get(shown["previewUrl"])
                        previews[shown["previewUrl"]] = fetched.status_code
                        if fetched.status_code == 200:
                            _jpeg_at_most_256(fetched.content)
                if shown["status"] in ("completed", "failed"):
                    break
        assert shown["status"] == "completed" and "previewUrl" not in shown
        assert len(previews) >= 2, previews
        assert 200 in previews.values(), "a preview could be fetched while it was shown"
        read = client.get(f"/jobs/{job['id']}").json()["data"]
        assert "previewUrl" not in read
    # Deleted with the end of the job: the store keeps none of them.
    assert all(httpx.get(url).status_code == 404 for url in previews)


def test_the_python_client_and_the_cli_receive_the_live_preview(
    diffusion: Service, tmp_path: Path
) -> None:
    key = diffusion.new_key()
    seen: list[str] = []
    saved: list[bytes] = []
    with Client(diffusion.api, key) as client:
        job = client.images.generate("[slow] a mill by a river", quality="high")

        def on_progress(update: Any) -> None:
            if update.preview_url and update.preview_url not in seen:
                seen.append(update.preview_url)
                path = update.save_preview(tmp_path / "client.jpg")
                if path is not None:
                    saved.append(path.read_bytes())

        done = job.wait(on_progress=on_progress)
    assert done.status == "completed" and done.preview_url is None
    assert len(seen) >= 2 and saved
    _jpeg_at_most_256(saved[-1])

    preview = tmp_path / "cli.jpg"
    result = subprocess.run(
        [sys.executable, "-m", "sfumato", "generate", "[slow] a windmill", "--quality", "high",
         "--preview", str(preview), "-o", str(tmp_path / "out"),
         "--api-url", diffusion.api, "--api-key", key],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    _jpeg_at_most_256(preview.read_bytes())
    assert [line for line in result.stdout.splitlines() if line.endswith(".png")]


def test_the_worker_reports_its_batches_and_model_cache_lookups(diffusion: Service) -> None:
    """The runner feeds the batcher's calls and the model cache's lookups to the metrics an
    embedded gateway serves (a worker serves them on its probe port)."""
    key = diffusion.new_key()
    with diffusion.client(key) as client:
        wait_done(client, create(client, f"metrics-{time.monotonic_ns()}")["id"])
    text = httpx.get(f"{diffusion.metrics_url}/metrics").text
    assert sample_value(text, "sfumato_batch_size_count", pipeline="generate") >= 1
    assert sample_value(text, "sfumato_model_cache_lookups_total", result="hit") >= 1
