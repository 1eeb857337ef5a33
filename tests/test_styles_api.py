"""Brand styles through HTTP: extraction jobs on fixture sites, style reads, styleId in generate
and edit.

Extraction runs on the service that may fetch from loopback (SFUMATO_FETCH_ALLOW=127.0.0.1, S3
storage); styleId on edit runs in both modes on a style saved straight into the database.
"""

from __future__ import annotations

import functools
import io
import logging
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from core.accounts import service as accounts
from core.ids import new_id
from core.tables import Style
from gateway.styles.schemas import StyleDetail
from tests.support.service import Service
from tests.support.styles import SITES, SiteHandler
from tests.test_jobs import create, wait_done

FETCHING = pytest.mark.parametrize("service", ["s3"], indirect=True)
BOTH_MODES = pytest.mark.parametrize("service", ["embedded", "distributed"], indirect=True)


def saved_style(service: Service, key: str, colours: list[dict[str, Any]] | None = None) -> str:
    caller = accounts.authenticate(service.services.db, key)
    assert caller is not None
    style = Style(
        id=new_id(),
        account_id=caller.account_id,
        name="Test brand",
        colours=colours or [],
        typography=[],
        tone=[],
        aesthetic="",
    )
    with service.services.db.write() as session:
        session.add(style)
    return style.id


@pytest.fixture(scope="module")
def sites() -> Iterator[str]:
    handler = functools.partial(SiteHandler, directory=str(SITES))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def extract(client: httpx.Client, url: str) -> dict:
    response = client.post("/styles/extract", json={"url": url})
    assert response.status_code == 202, response.text
    created = response.json()["data"]
    assert created["type"] == "style.extract"
    # The first extraction of a process loads the sentence model: give it time on a busy machine.
    for _ in range(30):
        job = client.get(f"/styles/extractions/{created['id']}", params={"wait": "true"})
        data = job.json()["data"]
        if data["status"] in ("completed", "failed"):
            return data
    raise AssertionError("the extraction did not finish")


def extracted_style(client: httpx.Client, url: str) -> str:
    """The id of the style an extraction of `url` saved."""
    job = extract(client, url)
    assert job["status"] == "completed", job
    return str(job["result"]["style"]["id"])


@FETCHING
def test_extraction_saves_a_style_that_reads_back_exactly_as_specified(
    service: Service, sites: str
) -> None:
    key = service.new_key()
    with service.client(key) as client:
        job = extract(client, f"{sites}/utility/")
        assert job["status"] == "completed", job
        style_id = job["result"]["style"]["id"]
        detail = client.get(f"/styles/{style_id}").json()["data"]
        StyleDetail.model_validate(detail)
        assert detail["id"] == style_id
        assert detail["name"] == "Launchpad"
        assert detail["url"] == f"{sites}/utility/"
        assert detail["logoUrl"] and httpx.get(detail["logoUrl"]).status_code == 200
        summaries = client.get("/styles").json()
        assert summaries["nextCursor"] is None
        assert summaries["data"] == [
            {
                "id": style_id,
                "name": "Launchpad",
                "url": detail["url"],
                "logoUrl": detail["logoUrl"],
                "palette": [c["hex"] for c in detail["colours"] if c["type"] == "solid"],
            }
        ]
        assert client.get(f"/jobs/{job['id']}").status_code == 200
        assert client.get("/jobs").json()["data"] == [], "style extractions are not listed"
    assert service.balance(key) == 1000 - 5
    with service.client(service.new_key()) as stranger:
        assert stranger.get(f"/styles/{style_id}").status_code == 404
        assert stranger.get("/styles/not-a-uuid").status_code == 404


@FETCHING
def test_styles_page_with_a_cursor(service: Service, sites: str) -> None:
    key = service.new_key()
    with service.client(key) as client:
        made = [extracted_style(client, f"{sites}/{site}/") for site in ("inline", "bare")]
        first = client.get("/styles", params={"limit": 1}).json()
        second = client.get("/styles", params={"limit": 1, "cursor": first["nextCursor"]}).json()
    assert [first["data"][0]["id"], second["data"][0]["id"]] == made[::-1]
    assert second["nextCursor"] is None


@FETCHING
def test_a_site_that_cannot_be_fetched_fails_the_job_and_refunds(
    service: Service, sites: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = service.new_key()
    with service.client(key) as client, caplog.at_level(logging.INFO, logger="workers"):
        job = extract(client, f"{sites}/no-such-site/")
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
def test_style_id_makes_the_brand_palette_dominant(service: Service, sites: str) -> None:
    key = service.new_key()
    prompt = "a quiet landscape"
    with service.client(key) as client:
        style_id = extracted_style(client, f"{sites}/northwind/")
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
