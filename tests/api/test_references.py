"""References on POST /images/generate, through HTTP: every form resolves to the right pixels,
every unresolvable one is a 400 naming its field, public URLs are fetched once and re-hosted.

The test pipeline's `[echo-reference]` prompt returns the first reference image as the result,
so a result's colour shows exactly which image reached the worker.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image

from benchmarks.testkit.images import image_bytes
from core.tables import JobRow, Media
from tests.support.http_jobs import wait_done
from tests.support.service import Service
from tests.support.web import IMAGE_COLOUR, WebServer, web_server

ECHO = "[echo-reference] show it back"


@pytest.fixture(scope="module")
def web() -> Iterator[WebServer]:
    with web_server() as server:
        yield server


# Local storage in both modes, and S3 (tests/conftest.py).
EVERY_STORAGE = pytest.mark.parametrize("service", ["embedded", "distributed", "s3"], indirect=True)
ONLY_S3 = pytest.mark.parametrize("service", ["s3"], indirect=True)


def uploaded(client: httpx.Client, colour: tuple[int, int, int]) -> dict[str, Any]:
    """Presign, PUT and complete a PNG of one colour; the upload and its uploadUrl."""
    presigned = client.post(
        "/uploads", json={"filename": "ref.png", "contentType": "image/png"}
    ).json()["data"]
    put = httpx.put(
        presigned["uploadUrl"], content=image_bytes(colour), headers={"Content-Type": "image/png"}
    )
    assert put.status_code == 200
    completed = client.post(f"/uploads/{presigned['uploadId']}/complete").json()["data"]
    return {**completed, "uploadUrl": presigned["uploadUrl"]}


def generate(client: httpx.Client, references: list[str]) -> httpx.Response:
    return client.post(
        "/images/generate", json={"prompt": ECHO, "quality": "low", "references": references}
    )


def result_colour(job: dict[str, Any]) -> tuple[int, ...]:
    assert job["status"] == "completed", job
    image = Image.open(io.BytesIO(httpx.get(job["result"]["images"][0]["url"]).content))
    return tuple(image.convert("RGB").getpixel((image.width // 2, image.height // 2)))


def stored_inputs(service: Service, job_id: str) -> list[dict[str, Any]]:
    with service.services.db.read() as session:
        job = session.get(JobRow, job_id)
        assert job is not None
        return list(job.inputs["references"])


@EVERY_STORAGE
def test_every_form_of_an_own_image_resolves_to_its_pixels(service: Service) -> None:
    colour = (30, 160, 90)
    with service.client(service.new_key()) as client:
        upload = uploaded(client, colour)
        by_upload = generate(client, [upload["id"]])
        assert by_upload.status_code == 202, by_upload.text
        first = wait_done(client, by_upload.json()["data"]["id"])
        assert result_colour(first) == colour
        inputs = stored_inputs(service, first["id"])
        assert inputs == [
            {
                "mediaId": upload["id"],
                "key": f"uploads/{upload['id']}.png",
                "contentType": "image/png",
                "width": 64,
                "height": 48,
            }
        ]
        image = first["result"]["images"][0]
        # A prior job (its first image), an image id, and the URLs this service handed out.
        for reference in (first["id"], image["id"], image["url"], upload["url"]):
            response = generate(client, [reference])
            assert response.status_code == 202, (reference, response.text)
        job = wait_done(client, response.json()["data"]["id"])
        assert result_colour(job) == colour
        by_upload_url = generate(client, [upload["uploadUrl"]])
        assert by_upload_url.status_code == 202, by_upload_url.text
        assert stored_inputs(service, by_upload_url.json()["data"]["id"]) == inputs


def test_references_that_do_not_resolve_are_400_naming_each_field(
    service: Service, key: str, web: WebServer
) -> None:
    web.seen.clear()
    with (
        service.client(key) as client,
        service.client(service.new_key()) as stranger,
    ):
        strangers_upload = uploaded(stranger, (1, 2, 3))
        pending_upload = client.post(
            "/uploads", json={"filename": "a.png", "contentType": "image/png"}
        ).json()["data"]
        own = [
            str(uuid.uuid4()),
            strangers_upload["id"],
            pending_upload["uploadId"],
            "not a reference",
        ]
        response = generate(client, own)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert error["details"] == {
            "references[0]": "reference not found",
            "references[1]": "reference not found",
            "references[2]": "the upload is not completed (POST /uploads/{id}/complete)",
            "references[3]": "must be an upload id, an image or job id, or an https URL",
        }
        outside = [
            web.url("/image.png"),  # this machine, and plain http: neither is allowed
            "https://169.254.169.254/latest/meta-data/",
            "https://0x7f.0.0.1/a.png",
            strangers_upload["url"],
        ]
        details = generate(client, outside).json()["error"]["details"]
        assert details["references[0]"].startswith("could not be fetched: 127.0.0.1 is a loopback")
        assert "169.254.169.254 is a link-local address" in details["references[1]"]
        assert details["references[2]"] == (
            "could not be fetched: 0x7f.0.0.1 resolves to a non-public address"
        )
        assert details["references[3]"] == "reference not found"
        assert client.get("/jobs").json()["data"] == []
    assert web.seen == []
    assert service.balance(key) == 1000


def test_a_job_that_has_no_image_yet_is_not_a_reference(service: Service, key: str) -> None:
    with service.client(key) as client:
        running = client.post("/images/generate", json={"prompt": "[sleep 5] slow"}).json()
        job_id = running["data"]["id"]
        details = generate(client, [job_id]).json()["error"]["details"]
        assert details["references[0]"] in (
            "the job is pending; it has no image",
            "the job is processing; it has no image",
        )
        client.post(f"/jobs/{job_id}/cancel")
        assert generate(client, [job_id]).json()["error"]["details"] == {
            "references[0]": "the job failed; it has no image"
        }


@ONLY_S3
def test_a_public_url_is_fetched_once_at_create_and_rehosted_in_storage(
    service: Service, web: WebServer
) -> None:
    web.seen.clear()
    with service.client(service.new_key()) as client:
        response = generate(client, [web.url("/image.png")])
        assert response.status_code == 202, response.text
        assert web.paths == ["/image.png"]
        job = wait_done(client, response.json()["data"]["id"])
        assert result_colour(job) == IMAGE_COLOUR
        [reference] = stored_inputs(service, job["id"])
        assert reference["key"].startswith("references/") and reference["key"].endswith(".png")
        assert service.services.storage.size_of(reference["key"]) == len(image_bytes(IMAGE_COLOUR))
        with service.services.db.read() as session:
            media = session.get(Media, reference["mediaId"])
            assert media is not None and media.kind == "reference"
        not_an_image = generate(client, [web.url("/text")]).json()["error"]["details"]
        assert not_an_image == {
            "references[0]": "the fetched file is not a PNG, JPEG, GIF or WebP image"
        }
    # The worker read our copy: the web server saw the one fetch and the refused text only.
    assert web.paths == ["/image.png", "/text"]


@ONLY_S3
def test_generated_images_land_in_s3_behind_presigned_urls(service: Service) -> None:
    with service.client(service.new_key()) as client:
        created = client.post("/images/generate", json={"prompt": "[sleep 0] into the bucket"})
        job = wait_done(client, created.json()["data"]["id"])
    image = job["result"]["images"][0]
    storage_url = service.services.settings.storage_url
    assert storage_url is not None
    endpoint = storage_url.partition("endpoint=")[2]
    assert image["url"].startswith(f"{endpoint}/sfumato-test-media/images/{job['id']}/")
    assert "X-Amz-Signature=" in image["url"]
    download = httpx.get(image["url"])
    assert download.status_code == 200
    assert Image.open(io.BytesIO(download.content)).format == "PNG"
