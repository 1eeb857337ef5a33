"""From nothing to real models in one command: `sfumato models pull` from the stand-in hub into
a service's data directory, then the service (no SFUMATO_PIPELINES, no SFUMATO_MODELS_FILE)
serves all six operations with the pulled models' diffusion pipelines, each HTTP job ending in
stored media. (A registry naming only some operations, the rest builtin: test_models_pull.)"""

from __future__ import annotations

import io
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
import tomlkit
from PIL import Image

from core.tables import JobRow
from tests.conftest import COMMON_ENV
from tests.support.clips import decoded
from tests.support.http_jobs import video_done, wait_done
from tests.support.model_hub import models_env, sfumato_models, standin_hub
from tests.support.service import Mode, Service, running_service
from tests.support.threads import one_torch_thread

pytestmark = pytest.mark.slow

# A preset for every operation, each run at its own settings (sizes, steps, frame rates) but the
# transition's area, set smaller in the pulled entry as a user may: at its preset's 720P area
# (960 x 960 for a square) the tiny model's call for 65 frames took 100 s on a loaded 2-core CPU.
TRANSITION_RESOLUTION = 448
PULLED = (
    "sd-turbo",
    "instruct-pix2pix",
    "sdxl-inpaint",
    "sd-x4-upscaler",
    "ltx-video",
    "wan2.1-flf2v",
)


@pytest.fixture(scope="module")
def pulled_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    data_dir = tmp_path_factory.mktemp("pulled")
    with standin_hub(*PULLED) as hub:
        result = sfumato_models(models_env(hub, data_dir), "pull", *PULLED)
        assert result.returncode == 0, result.stderr
    registry = data_dir / "models" / "models.toml"
    document = tomlkit.parse(registry.read_text())
    document["operations"]["transition"]["options"]["resolution"] = TRANSITION_RESOLUTION
    registry.write_text(tomlkit.dumps(document))
    # Long polls of 15 s, not 4: the helpers give up after 10 (image) or 30 (video) polls, and
    # the x4 upscale's job outlasted 10 polls of 4 s on a loaded 2-core machine.
    env = {
        **COMMON_ENV,
        "SFUMATO_PIPELINES": "",
        "SFUMATO_MODEL_DEVICE": "cpu",
        "SFUMATO_WAIT_SECONDS": "15",
    }
    mode = Mode("embedded", env, separate_workers=False)
    with one_torch_thread(), running_service(mode, data_dir) as service:
        yield service


def png(url: str) -> Image.Image:
    response = httpx.get(url)
    assert response.status_code == 200
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "PNG"
    image.load()
    return image


def completed(service: Service, client: httpx.Client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 202, response.text
    job = wait_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    return job


def video(client: httpx.Client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 202, response.text
    job = video_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    return job


def note_of(service: Service, job_id: str) -> str:
    with service.services.db.read() as session:
        job = session.get(JobRow, job_id)
        assert job is not None
        return job.message or ""


def test_pulled_models_serve_every_operation(
    pulled_service: Service,
) -> None:
    service = pulled_service
    with service.client(service.new_key(credits=5000)) as client:
        generated = completed(service, client, "/images/generate", {"prompt": "a red barn"})
        image = generated["result"]["images"][0]
        assert png(image["url"]).size == (image["width"], image["height"]) == (1024, 1024)
        assert note_of(service, generated["id"]).startswith(
            "stabilityai/sd-turbo: 2 steps at 512x512"
        )

        edited = completed(
            service, client, "/images/edit", {"imageId": image["id"], "prompt": "make it snowy"}
        )
        assert png(edited["result"]["images"][0]["url"]).size == (1024, 1024)
        assert note_of(service, edited["id"]).startswith("timbrooks/instruct-pix2pix: instruction")

        upscaled = completed(
            service, client, "/images/upscale", {"imageId": image["id"], "resolution": "2K"}
        )
        assert png(upscaled["result"]["images"][0]["url"]).size == (2048, 2048)
        assert note_of(service, upscaled["id"]).startswith(
            "stabilityai/stable-diffusion-x4-upscaler"
        )

        reframed = completed(
            service, client, "/images/resize", {"imageId": image["id"], "aspectRatio": "16:9"}
        )
        assert png(reframed["result"]["images"][0]["url"]).size == (1360, 768)
        assert note_of(service, reframed["id"]).startswith(
            "diffusers/stable-diffusion-xl-1.0-inpainting-0.1: outpainted"
        )

        animated = video_done(
            client,
            client.post(
                "/videos/image-to-video",
                json={
                    "image": image["id"],
                    "prompt": "slow zoom",
                    "duration": 1,
                    "resolution": "480p",
                },
            ).json()["data"]["id"],
        )
        assert animated["status"] == "completed", animated
        clip = animated["result"]["video"]
        assert (clip["width"], clip["height"]) == (480, 480)
        assert httpx.get(clip["url"]).content[4:8] == b"ftyp"
        assert note_of(service, animated["id"]).startswith("Lightricks/LTX-Video: 25 frames")

        # Wan 2.1 FLF2V at its preset's 16 fps, 40 steps with guidance: the shortest transition,
        # 4 s, is 64 frames past the first, made in one call at 448x448 (the area set above)
        # and retimed to 96 frames of 480x480 (RIFE in-betweens).
        joined = video(
            client,
            "/videos/frames",
            {
                "startImage": image["id"],
                "endImage": edited["result"]["images"][0]["id"],
                "prompt": "dusk",
                "duration": 4,
                "resolution": "480p",
            },
        )
        clip = joined["result"]["video"]
        assert (clip["width"], clip["height"]) == (480, 480)
        facts = decoded(clip["url"])
        assert facts["codec"] == "h264" and facts["size"] == (480, 480)
        assert len(facts["frames"]) == 96 and facts["fps"] == 24.0
        pixels = np.stack(facts["frames"]).astype(np.float32)
        assert pixels.std(axis=0).mean() > 1.0, "the frames change over the clip"
        assert note_of(service, joined["id"]).startswith(
            "Wan-AI/Wan2.1-FLF2V-14B-720P-diffusers: 65 frames at 448x448, 16 fps"
        )
