"""Extracting a site again (issue 38 item 13): the account's style of that site is saved over,
keeping its id and the images linked into its folder, and its earlier brand images go; `asNew`
saves a second style instead."""

from __future__ import annotations

import httpx
import pytest

from tests.support.service import Service
from tests.support.styles_api import FETCHING_BOTH_MODES, extract, extracted_style


def folder(client: httpx.Client, style_id: str) -> list[dict]:
    return client.get(f"/styles/{style_id}/assets", params={"limit": 50}).json()["data"]


@FETCHING_BOTH_MODES
def test_extracting_a_site_again_updates_its_style_unless_asked_for_a_new_one(
    service: Service, base_url: str
) -> None:
    key = service.new_key()
    with service.client(key) as client:
        style_id = extracted_style(client, f"{base_url}/northwind/")
        first_brand = {asset["id"]: asset["url"] for asset in folder(client, style_id)}
        linked = client.post(
            f"/styles/{style_id}/assets", json={"images": [f"{base_url}/aurora/social.png"]}
        )
        assert linked.status_code == 200, linked.text
        upload_asset = linked.json()["data"][0]["id"]

        # The same site: the trailing slash, a query and a fragment aside.
        again = extract(client, f"{base_url}/northwind?utm_source=mail#top")
        assert again["status"] == "completed", again
        assert again["result"]["style"]["id"] == style_id
        assert [style["id"] for style in client.get("/styles").json()["data"]] == [style_id]
        detail = client.get(f"/styles/{style_id}").json()["data"]
        assert detail["url"].startswith(f"{base_url}/northwind")
        assets = folder(client, style_id)
        brand = [asset for asset in assets if asset["source"] == "brand"]
        assert {asset["name"] for asset in brand} == {"logo.png", "beans.png", "social.png"}
        assert not {asset["id"] for asset in brand} & set(first_brand), "replaced, not added"
        assert upload_asset in {asset["id"] for asset in assets}, "linked images stay"
        assert httpx.get(detail["logoUrl"]).status_code == 200
        for url in first_brand.values():
            assert httpx.get(url).status_code == 404, "the earlier brand images are deleted"

        separate = extract(client, f"{base_url}/northwind/", asNew=True)
        assert separate["status"] == "completed", separate
        second_id = str(separate["result"]["style"]["id"])
        assert second_id != style_id
        listed = [style["id"] for style in client.get("/styles").json()["data"]]
        assert listed == [second_id, style_id]
        assert upload_asset in {asset["id"] for asset in folder(client, style_id)}
        # With two, the newest is the one a plain extraction updates.
        assert extracted_style(client, f"{base_url}/northwind/") == second_id
        # Another site is another style.
        assert extracted_style(client, f"{base_url}/aurora/") not in listed
    assert service.balance(key) == 1000 - 5 * 5


@pytest.mark.parametrize("as_new", ["yes", 1, None])
def test_as_new_must_be_a_boolean(service: Service, as_new: object) -> None:
    key = service.new_key()
    with service.client(key) as client:
        answer = client.post(
            "/styles/extract", json={"url": "https://brand.example/", "asNew": as_new}
        )
    assert answer.status_code == 400, answer.text
    assert list(answer.json()["error"]["details"]) == ["asNew"]
    assert service.balance(key) == 1000
