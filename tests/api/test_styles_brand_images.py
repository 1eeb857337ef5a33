"""Issue 22 through HTTP: every brand image an extraction re-hosts is a checked raster image. An
`<svg onload=...>` logo is served back as a PNG; HTML under an image type is never stored."""

from __future__ import annotations

import io

import httpx
from PIL import Image

from benchmarks.testkit.sites import SITES
from core.tables import Media
from tests.support.service import Service
from tests.support.styles_api import FETCHING, extracted_style


def stored_brand_media(service: Service, style_id: str) -> list[Media]:
    with service.services.db.read() as session:
        return list(
            session.query(Media).filter(
                Media.kind == "brand", Media.storage_key.like(f"styles/{style_id}/%")
            )
        )


@FETCHING
def test_an_svg_logo_with_script_is_served_as_a_png(service: Service, base_url: str) -> None:
    key = service.new_key()
    with service.client(key) as client:
        style_id = extracted_style(client, f"{base_url}/svglogo/")
        detail = client.get(f"/styles/{style_id}").json()["data"]
        assets = client.get(f"/styles/{style_id}/assets").json()["data"]
    logo = httpx.get(detail["logoUrl"])
    assert logo.status_code == 200
    assert logo.headers["content-type"] == "image/png"
    assert b"alert" not in logo.content
    with Image.open(io.BytesIO(logo.content)) as image:
        assert image.format == "PNG"
    assert [(asset["name"], asset["altText"]) for asset in assets] == [
        ("logo.png", "Saltmarsh logo")
    ]
    [media] = stored_brand_media(service, style_id)
    assert media.content_type == "image/png" and media.storage_key.endswith("/logo.png")


@FETCHING
def test_html_served_as_an_image_is_not_stored(service: Service, base_url: str) -> None:
    key = service.new_key()
    with service.client(key) as client:
        style_id = extracted_style(client, f"{base_url}/imagetrap/")
        detail = client.get(f"/styles/{style_id}").json()["data"]
        assets = client.get(f"/styles/{style_id}/assets").json()["data"]
    assert [asset["name"] for asset in assets] == ["touch-icon.png"]
    logo = httpx.get(detail["logoUrl"])
    assert logo.headers["content-type"] == "image/png"
    assert logo.content == (SITES / "imagetrap" / "touch-icon.png").read_bytes()
    stored = stored_brand_media(service, style_id)
    assert [media.content_type for media in stored] == ["image/png"]
    for media in stored:
        assert b"<script" not in service.services.storage.get_bytes(media.storage_key)
