"""Edit, resize (reframe) and upscale through HTTP, on the builtin CPU pipelines."""

from __future__ import annotations

import io

import httpx
import numpy as np
import pytest
from PIL import Image

from core.tables import JobRow
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service

UNKNOWN = "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"


def decoded(url: str) -> Image.Image:
    response = httpx.get(url)
    assert response.status_code == 200
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "PNG"
    return image.convert("RGB")


def operate(client: httpx.Client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 202, response.text
    created = response.json()["data"]
    assert created["type"] == "image.edit"
    job = wait_done(client, created["id"])
    assert job["status"] == "completed", job
    return job


@pytest.fixture(scope="module")
def base(service: Service) -> tuple[str, dict]:
    """A key and one completed 1K square generation of it to work on."""
    key = service.new_key()
    with service.client(key) as client:
        job = wait_done(client, create(client, "a red barn in a green field at sunset")["id"])
    assert job["status"] == "completed"
    return key, job


def test_edit_changes_the_source_and_records_its_parent(service: Service, base: tuple) -> None:
    key, source = base
    with service.client(key) as client:
        job = operate(
            client, "/images/edit", {"imageId": source["id"], "prompt": "make it black and white"}
        )
        image = job["result"]["images"][0]
        assert (image["width"], image["height"]) == (1024, 1024)
        pixels = np.asarray(decoded(image["url"]), dtype=np.int16)
        assert np.abs(pixels[..., 0] - pixels[..., 2]).mean() < 2, "grey, not colour"
        again = operate(
            client, "/images/edit", {"imageId": image["id"], "prompt": "add film grain"}
        )
        assert client.get(f"/images/{again['id']}").json()["data"]["type"] == "image.edit"
    with service.services.db.read() as session:
        first = session.get(JobRow, job["id"])
        second = session.get(JobRow, again["id"])
        assert first is not None and second is not None
        assert first.parent_job_id == source["id"]
        assert second.parent_job_id == job["id"], "the edit chain is recorded"


def test_resize_reframes_to_the_promised_size(service: Service, base: tuple) -> None:
    key, source = base
    with service.client(key) as client:
        job = operate(
            client,
            "/images/resize",
            {
                "imageId": source["result"]["images"][0]["id"],
                "aspectRatio": "21:9",
                "resolution": "1K",
            },
        )
    image = job["result"]["images"][0]
    assert (image["width"], image["height"]) == (1568, 672)
    assert decoded(image["url"]).size == (1568, 672)


# Upscaling to 2K costs 9 s of CPU and is the same in every mode: run once.
@pytest.mark.parametrize("service", ["embedded"], indirect=True)
def test_upscale_reaches_the_target_resolution(service: Service, base: tuple) -> None:
    key, source = base
    before = service.balance(key)
    with service.client(key) as client:
        job = operate(client, "/images/upscale", {"imageId": source["id"], "resolution": "2K"})
    image = job["result"]["images"][0]
    assert (image["width"], image["height"]) == (2048, 2048)
    assert decoded(image["url"]).size == (2048, 2048)
    assert service.balance(key) == before - 2


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/images/edit", {"imageId": UNKNOWN, "prompt": "warmer"}, "imageId"),
        ("/images/edit", {"imageId": "nope", "prompt": "warmer"}, "imageId"),
        ("/images/edit", {"prompt": "warmer"}, "imageId"),
        ("/images/resize", {"imageId": UNKNOWN, "aspectRatio": "3:1"}, "aspectRatio"),
        ("/images/resize", {"imageId": UNKNOWN, "aspectRatio": "1:8"}, "imageId"),
        ("/images/upscale", {"imageId": UNKNOWN}, "resolution"),
        ("/images/upscale", {"imageId": UNKNOWN, "resolution": "8K"}, "resolution"),
        ("/images/edit", {"imageId": UNKNOWN, "prompt": ""}, "prompt"),
        (
            "/images/edit",
            {"imageId": UNKNOWN, "prompt": "x", "references": ["a"] * 5},
            "references",
        ),
    ],
)
def test_bad_edits_are_400_naming_the_field(
    service: Service, key: str, path: str, body: dict, field: str
) -> None:
    with service.client(key) as client:
        response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["details"]
    assert service.balance(key) == 1000


def test_image_id_must_be_the_callers_own_completed_image(service: Service, base: tuple) -> None:
    _, source = base
    stranger = service.new_key()
    with service.client(stranger) as client:
        foreign = client.post("/images/edit", json={"imageId": source["id"], "prompt": "warmer"})
        assert foreign.status_code == 400
        assert foreign.json()["error"]["details"] == {"imageId": "image not found"}
        running = create(client, "[sleep 3] not done yet")
        early = client.post("/images/upscale", json={"imageId": running["id"], "resolution": "2K"})
        assert early.status_code == 400
        assert "not completed" in early.json()["error"]["details"]["imageId"]
        client.post(f"/jobs/{running['id']}/cancel")
