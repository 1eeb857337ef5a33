"""Brand styles through HTTP: extraction jobs on fixture sites, style reads, styleId in generate
and edit.

Extraction runs on the service that may fetch from loopback (SFUMATO_FETCH_ALLOW=127.0.0.1, S3
storage); styleId on edit runs in both modes on a style saved straight into the database.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from gateway.styles.schemas import StyleDetail
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service
from tests.support.styles_api import BOTH_MODES, FETCHING, extract, extracted_style, saved_style


def object_of(url: str) -> str:
    """A media URL without its query (a presigned URL's signature and date)."""
    return url.split("?", 1)[0]


@FETCHING
def test_extraction_saves_a_style_that_reads_back_exactly_as_specified(
    service: Service, base_url: str
) -> None:
    key = service.new_key()
    with service.client(key) as client:
        job = extract(client, f"{base_url}/utility/")
        assert job["status"] == "completed", job
        style_id = job["result"]["style"]["id"]
        detail = client.get(f"/styles/{style_id}").json()["data"]
        StyleDetail.model_validate(detail)
        assert detail["id"] == style_id
        assert detail["name"] == "Launchpad"
        assert detail["url"] == f"{base_url}/utility/"
        assert detail["logoUrl"] and httpx.get(detail["logoUrl"]).status_code == 200
        summaries = client.get("/styles").json()
        assert summaries["nextCursor"] is None
        # On S3 each read presigns the logo afresh (X-Amz-Date, to the second): the same object.
        [summary] = summaries["data"]
        assert object_of(summary.pop("logoUrl")) == object_of(detail["logoUrl"])
        assert summary == {
            "id": style_id,
            "name": "Launchpad",
            "url": detail["url"],
            "palette": [c["hex"] for c in detail["colours"] if c["type"] == "solid"],
        }
        assert client.get(f"/jobs/{job['id']}").status_code == 200
        assert client.get("/jobs").json()["data"] == [], "style extractions are not listed"
    assert service.balance(key) == 1000 - 5
    with service.client(service.new_key()) as stranger:
        assert stranger.get(f"/styles/{style_id}").status_code == 404
        assert stranger.get("/styles/not-a-uuid").status_code == 404


@FETCHING
def test_styles_page_with_a_cursor(service: Service, base_url: str) -> None:
    key = service.new_key()
    with service.client(key) as client:
        made = [extracted_style(client, f"{base_url}/{site}/") for site in ("inline", "bare")]
        first = client.get("/styles", params={"limit": 1}).json()
        second = client.get("/styles", params={"limit": 1, "cursor": first["nextCursor"]}).json()
    assert [first["data"][0]["id"], second["data"][0]["id"]] == made[::-1]
    assert second["nextCursor"] is None


@FETCHING
def test_a_site_that_cannot_be_fetched_fails_the_job_and_refunds(
    service: Service, base_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = service.new_key()
    with service.client(key) as client, caplog.at_level(logging.INFO, logger="workers"):
        job = extract(client, f"{base_url}/no-such-site/")
        bad_scheme = client.post("/styles/extract", json={"url": "ftp://example.com/"})
    # An expected failure is one log line, not a traceback.
    logged = [record for record in caplog.records if job["id"] in record.getMessage()]
    failed = [record for record in logged if "failed" in record.getMessage()]
    assert len(failed) == 1, [record.getMessage() for record in logged]
    assert failed[0].exc_info is None and "\n" not in failed[0].getMessage()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "GENERATION_FAILED"
    assert job["error"]["message"].startswith("Could not extract a style")
    assert service.balance(key) == 1000
    assert bad_scheme.status_code == 400
    assert bad_scheme.json()["error"]["details"] == {"url": "must be an http or https URL"}


def _mean_colour(url: str) -> np.ndarray:
    image = Image.open(io.BytesIO(httpx.get(url).content)).convert("RGB")
    return np.asarray(image, dtype=np.float64).reshape(-1, 3).mean(axis=0)


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[index : index + 2], 16) for index in (1, 3, 5)], float)


@FETCHING
def test_style_id_makes_the_brand_palette_dominant(service: Service, base_url: str) -> None:
    key = service.new_key()
    prompt = "a quiet landscape"
    with service.client(key) as client:
        style_id = extracted_style(client, f"{base_url}/northwind/")
        palette = [
            _rgb(c["hex"])
            for c in client.get(f"/styles/{style_id}").json()["data"]["colours"]
            if c["type"] == "solid"
        ]
        plain = wait_done(client, create(client, prompt)["id"])
        styled = wait_done(client, create(client, prompt, styleId=style_id)["id"])
        unknown = client.post(
            "/images/generate",
            json={"prompt": prompt, "styleId": "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"},
        )
    assert unknown.status_code == 400
    assert unknown.json()["error"]["details"] == {"styleId": "style not found"}

    def distance_to_palette(job: dict) -> float:
        mean = _mean_colour(job["result"]["images"][0]["url"])
        return min(float(np.linalg.norm(mean - colour)) for colour in palette)

    assert distance_to_palette(styled) < distance_to_palette(plain)


@BOTH_MODES
def test_style_id_on_edit_recolours_towards_the_palette(service: Service) -> None:
    key = service.new_key()
    palette = ["#E0218A", "#2B0A1F"]
    style_id = saved_style(
        service, key, [{"type": "solid", "name": "n", "hex": h, "role": ""} for h in palette]
    )
    with service.client(key) as client:
        source = wait_done(client, create(client, "[sleep 0.1] a plain square")["id"])

        def edit(**fields: Any) -> httpx.Response:
            body = {"imageId": source["id"], "prompt": "make it warmer", **fields}
            return client.post("/images/edit", json=body)

        plain = wait_done(client, edit().json()["data"]["id"])
        styled = wait_done(client, edit(styleId=style_id).json()["data"]["id"])
        unknown = edit(styleId="0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c")
    with service.client(service.new_key()) as stranger:
        foreign = stranger.post("/images/generate", json={"prompt": "a cat", "styleId": style_id})
    for refused in (unknown, foreign):
        assert refused.status_code == 400
        assert refused.json()["error"]["details"] == {"styleId": "style not found"}

    def distance_to_palette(job: dict) -> float:
        mean = _mean_colour(job["result"]["images"][0]["url"])
        return min(float(np.linalg.norm(mean - _rgb(colour))) for colour in palette)

    assert distance_to_palette(styled) < distance_to_palette(plain) - 20


def test_an_address_that_is_never_fetched_is_refused_at_create_for_nothing(
    service: Service,
) -> None:
    """A literal private, loopback or link-local address outside the allow-list (this service
    allows 127.0.0.1) is refused with 400 before the job exists: nothing charged, nothing
    listed (issue 38 item 13)."""
    key = service.new_key()
    refused = {
        "https://10.0.0.7/": "10.0.0.7 is a private address: it is never fetched",
        "http://169.254.169.254/latest/": (
            "169.254.169.254 is a link-local address: it is never fetched"
        ),
        "https://[::1]:8443/": "::1 is a loopback address: it is never fetched",
    }
    with service.client(key) as client:
        for url, reason in refused.items():
            answer = client.post("/styles/extract", json={"url": url})
            assert answer.status_code == 400, answer.text
            assert answer.json()["error"]["details"] == {"url": reason}
        listed = client.get("/jobs").json()["data"]
    assert listed == []
    assert service.balance(key) == 1000
