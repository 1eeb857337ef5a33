"""A style's linked folder through HTTP: seeding by extraction, linking uploads, public images and
generations, listing, and semantic search over the stored embeddings.

Styles for the linking tests are saved straight into the database (extraction has its own tests
and needs the fetching deployment); everything else goes through the API.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np

from benchmarks.testkit.images import image_bytes
from benchmarks.testkit.sites import SITES
from core.styles.assets import LINK_FETCH_SECONDS, LINKS_AT_ONCE
from core.tables import StyleAsset
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service
from tests.support.styles_api import BOTH_MODES, FETCHING, extracted_style, saved_style

FOREIGN_ID = "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"


def upload(client: httpx.Client, filename: str, colour: tuple[int, int, int]) -> str:
    presigned = client.post(
        "/uploads", json={"filename": filename, "contentType": "image/png"}
    ).json()["data"]
    put = httpx.put(
        presigned["uploadUrl"], content=image_bytes(colour), headers={"Content-Type": "image/png"}
    )
    assert put.status_code == 200
    completed = client.post(f"/uploads/{presigned['uploadId']}/complete")
    assert completed.status_code == 200, completed.text
    return str(completed.json()["data"]["id"])


def stored_assets(service: Service, style_id: str) -> list[StyleAsset]:
    with service.services.db.read() as session:
        return list(session.query(StyleAsset).filter(StyleAsset.style_id == style_id))


def search(client: httpx.Client, style_id: str, query: str, **fields: Any) -> list[dict]:
    response = client.post(f"/styles/{style_id}/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    hits: list[dict] = response.json()["data"]
    assert [hit["similarity"] for hit in hits] == sorted(
        (hit["similarity"] for hit in hits), reverse=True
    )
    return hits


@BOTH_MODES
def test_linked_uploads_and_generations_are_found_by_meaning(service: Service) -> None:
    key = service.new_key()
    style_id = saved_style(service, key)
    with service.client(key) as client:
        assert search(client, style_id, "anything") == []
        sneaker = upload(client, "red-sneaker-on-white.png", (200, 30, 30))
        lake = upload(client, "mountain-lake-at-dawn.png", (40, 90, 160))
        job = wait_done(
            client, create(client, "a steaming bowl of ramen noodles", quality="low")["id"]
        )
        linked = client.post(
            f"/styles/{style_id}/assets", json={"images": [sneaker, lake, job["id"], sneaker]}
        )
        assert linked.status_code == 200, linked.text
        assets = linked.json()["data"]
        assert [(a["name"], a["source"]) for a in assets] == [
            ("red-sneaker-on-white.png", "upload"),
            ("mountain-lake-at-dawn.png", "upload"),
            ("a-steaming-bowl-of-ramen-noodles.png", "generation"),
        ]
        assert httpx.get(assets[0]["url"]).content == image_bytes((200, 30, 30))
        again = client.post(f"/styles/{style_id}/assets", json={"images": [lake]}).json()["data"]
        assert [a["id"] for a in again] == [assets[1]["id"]], "linking twice keeps one asset"

        first = client.get(f"/styles/{style_id}/assets", params={"limit": 2}).json()
        rest = client.get(
            f"/styles/{style_id}/assets", params={"limit": 2, "cursor": first["nextCursor"]}
        ).json()
        assert rest["nextCursor"] is None
        listed = first["data"] + rest["data"]
        assert sorted(a["id"] for a in listed) == sorted(a["id"] for a in assets)

        shoes = search(client, style_id, "shoes")
        assert shoes[0]["name"] == "red-sneaker-on-white.png"
        assert set(shoes[0]) == {"id", "name", "url", "similarity"}
        assert search(client, style_id, "a lake in the mountains")[0]["id"] == assets[1]["id"]
        assert search(client, style_id, "noodle soup")[0]["id"] == assets[2]["id"]
        assert len(search(client, style_id, "shoes", limit=1)) == 1
        assert len(search(client, style_id, "shoes", limit=50)) == 3
        # Concurrent searches share the one model of the gateway process.
        with ThreadPoolExecutor(8) as pool:
            tops = pool.map(lambda q: search(client, style_id, q)[0]["id"], ["shoes", "lake"] * 4)
        assert list(tops) == [assets[0]["id"], assets[1]["id"]] * 4
        # A search sees what was linked after the folder was last searched.
        puppy = upload(client, "golden-retriever-puppy.png", (220, 170, 60))
        assert client.post(f"/styles/{style_id}/assets", json={"images": [puppy]}).is_success
        assert search(client, style_id, "a dog")[0]["name"] == "golden-retriever-puppy.png"

    stored = stored_assets(service, style_id)
    assert len(stored) == 4
    for asset in stored:
        vector = np.frombuffer(asset.embedding, dtype=np.float32)
        assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-3


@BOTH_MODES
def test_linking_is_all_or_nothing_and_bounded(service: Service) -> None:
    key = service.new_key()
    style_id = saved_style(service, key)
    with service.client(key) as client:
        good = upload(client, "logo.png", (10, 10, 10))
        mixed = client.post(
            f"/styles/{style_id}/assets", json={"images": [good, FOREIGN_ID, "ftp://x/y.png"]}
        )
        none = client.post(f"/styles/{style_id}/assets", json={"images": []})
        too_many = client.post(f"/styles/{style_id}/assets", json={"images": [good] * 21})
        missing = client.post(f"/styles/{style_id}/assets", json={})
        twenty = client.post(f"/styles/{style_id}/assets", json={"images": [good] * 20})
    assert mixed.status_code == 400
    assert mixed.json()["error"]["code"] == "VALIDATION_ERROR"
    assert set(mixed.json()["error"]["details"]) == {"images[1]", "images[2]"}
    for response in (none, too_many, missing):
        assert response.status_code == 400, response.text
        assert list(response.json()["error"]["details"]) == ["images"]
    assert twenty.status_code == 200 and len(twenty.json()["data"]) == 1
    assert len(stored_assets(service, style_id)) == 1, "the failed requests linked nothing"


@BOTH_MODES
def test_others_styles_are_404_and_search_bounds_are_400(service: Service) -> None:
    owner = service.new_key()
    style_id = saved_style(service, owner)
    with service.client(service.new_key()) as stranger:
        for target in (style_id, FOREIGN_ID, "not-a-uuid"):
            assert stranger.post(f"/styles/{target}/search", json={"query": "x"}).status_code == 404
            assert stranger.get(f"/styles/{target}/assets").status_code == 404
            mine = upload(stranger, "mine.png", (1, 2, 3))
            linked = stranger.post(f"/styles/{target}/assets", json={"images": [mine]})
            assert linked.status_code == 404
            assert linked.json()["error"]["code"] == "NOT_FOUND"
    with service.client(owner) as client:
        url = f"/styles/{style_id}/search"
        for body, field in (
            ({"query": ""}, "query"),
            ({"query": "x" * 1001}, "query"),
            ({}, "query"),
            ({"query": "x", "limit": 0}, "limit"),
            ({"query": "x", "limit": 51}, "limit"),
            ({"query": "x", "limit": "5"}, "limit"),
        ):
            response = client.post(url, json=body)
            assert response.status_code == 400, (body, response.text)
            assert list(response.json()["error"]["details"]) == [field]
        assert search(client, style_id, "x" * 1000) == []
        bad_cursor = client.get(f"/styles/{style_id}/assets", params={"cursor": "nope"})
        assert bad_cursor.status_code == 400


@FETCHING
def test_extraction_seeds_the_folder_with_the_sites_brand_images(
    service: Service,
    base_url: str,
) -> None:
    key = service.new_key()
    with service.client(key) as client:
        style_id = extracted_style(client, f"{base_url}/northwind/")
        assets = client.get(f"/styles/{style_id}/assets").json()["data"]
        by_name = {asset["name"]: asset for asset in assets}
        # The inline SVG logo is stored as the PNG the browser drew (issue 22).
        assert set(by_name) == {"logo.png", "beans.png", "social.png"}
        assert {asset["source"] for asset in assets} == {"brand"}
        assert by_name["beans.png"]["altText"] == "Freshly roasted beans on a linen cloth"
        assert by_name["logo.png"]["altText"] == "Northwind logo"
        social = httpx.get(by_name["social.png"]["url"])
        assert social.status_code == 200
        assert social.content == (SITES / "northwind" / "social.png").read_bytes()
        assert search(client, style_id, "roasted coffee beans")[0]["name"] == "beans.png"
        assert search(client, style_id, "a cup of coffee")[0]["name"] == "social.png"
        # A public image linked by URL is fetched once, re-hosted and named as its URL names it.
        linked = client.post(
            f"/styles/{style_id}/assets", json={"images": [f"{base_url}/aurora/social.png"]}
        )
        assert linked.status_code == 200, linked.text
        assert [(a["name"], a["source"]) for a in linked.json()["data"]] == [
            ("social.png", "upload")
        ]
        # A brand image that cannot be fetched (grotesk's og:image is a 404) is left out.
        touch_icon_only = extracted_style(client, f"{base_url}/grotesk/")
        seeded = client.get(f"/styles/{touch_icon_only}/assets").json()["data"]
        assert [asset["name"] for asset in seeded] == ["apple-touch-icon.png"]
    stored = stored_assets(service, style_id)
    assert len(stored) == 4
    assert all(len(asset.embedding) == 384 * 4 for asset in stored)


class _Tarpit(BaseHTTPRequestHandler):
    """A source that answers slower than any link may wait."""

    def do_GET(self) -> None:
        time.sleep(TARPIT_SECONDS)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        self.wfile.write(image_bytes((1, 2, 3)))

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


TARPIT_SECONDS = LINK_FETCH_SECONDS + 4


@FETCHING
def test_links_are_bounded_in_time_and_in_number_at_once(service: Service) -> None:
    """Slow sources tie up a gateway's threads for LINK_FETCH_SECONDS at most, and only
    LINKS_AT_ONCE requests' worth: one more is refused at once."""
    tarpit = ThreadingHTTPServer(("127.0.0.1", 0), _Tarpit)
    tarpit.daemon_threads = True
    threading.Thread(target=tarpit.serve_forever, daemon=True).start()
    slow = f"http://127.0.0.1:{tarpit.server_address[1]}/slow.png"
    key = service.new_key()
    style_id = saved_style(service, key)

    def link(_: int) -> tuple[httpx.Response, float]:
        with service.client(key) as client:
            started = time.monotonic()
            answer = client.post(f"/styles/{style_id}/assets", json={"images": [slow]})
            return answer, time.monotonic() - started

    try:
        with ThreadPoolExecutor(LINKS_AT_ONCE + 1) as pool:
            answers = list(pool.map(link, range(LINKS_AT_ONCE + 1)))
    finally:
        tarpit.shutdown()
        tarpit.server_close()
    busy = [(answer, took) for answer, took in answers if answer.status_code == 429]
    timed_out = [(answer, took) for answer, took in answers if answer.status_code == 400]
    assert len(busy) == 1 and len(timed_out) == LINKS_AT_ONCE, [a.text for a, _ in answers]
    refused, refused_after = busy[0]
    assert refused.json()["error"]["code"] == "RATE_LIMIT_ERROR"
    assert int(refused.headers["Retry-After"]) >= 1 and refused_after < LINK_FETCH_SECONDS
    for answer, took in timed_out:
        assert answer.json()["error"]["details"]["images[0]"].startswith("could not be fetched")
        assert took < TARPIT_SECONDS
    assert stored_assets(service, style_id) == []
