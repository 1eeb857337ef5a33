"""The NUL character in any string a request sends is a 400 naming the field, on SQLite and on
PostgreSQL alike (PostgreSQL's text cannot hold it: without the check it was a 500 there).
Runs on every deployment of the `service` fixture: embedded (SQLite) and distributed
(PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.support.service import Service

NUL = "\x00"
IMAGE = "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/images/generate", {"prompt": f"a red{NUL} bicycle"}, "prompt"),
        ("/images/generate", {"prompt": "hills", "references": ["ok", f"x{NUL}"]}, "references[1]"),
        ("/images/edit", {"imageId": IMAGE, "prompt": f"warmer{NUL}"}, "prompt"),
        (
            "/videos/image-to-video",
            {"image": IMAGE, "prompt": "waves", "negativePrompt": f"{NUL}"},
            "negativePrompt",
        ),
        ("/styles/extract", {"url": f"https://example.com/{NUL}"}, "url"),
        ("/uploads", {"filename": f"photo{NUL}.png", "contentType": "image/png"}, "filename"),
        (f"/styles/{IMAGE}/search", {"query": f"coffee{NUL}"}, "query"),
        (f"/styles/{IMAGE}/assets", {"images": [f"{NUL}"]}, "images[0]"),
        ("/images/generate", {"prompt": "hills", f"col{NUL}our": "red"}, "colour"),
    ],
)
def test_nul_in_a_body_string_is_a_400_naming_the_field(
    service: Service, key: str, path: str, body: dict, field: str
) -> None:
    with service.client(key) as client:
        response = client.post(path, json=body)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert any(name.replace(NUL, "") == field for name in error["details"]), error
        assert "NUL" in next(iter(error["details"].values()))
        assert client.get("/jobs").json()["data"] == []
    assert service.balance(key) == 1000


def test_nul_in_a_query_parameter_is_a_400_naming_it(service: Service, key: str) -> None:
    with service.client(key) as client:
        response = client.get("/jobs", params={"cursor": f"abc{NUL}"})
        assert response.status_code == 400, response.text
        assert set(response.json()["error"]["details"]) == {"cursor"}
        # Without NUL the same reads pass through untouched.
        assert client.get("/jobs", params={"cursor": ""}).status_code in (200, 400)
        assert client.get("/jobs").status_code == 200


def test_an_escaped_backslash_u0000_is_text_not_nul(service: Service, key: str) -> None:
    with service.client(key) as client:
        response = client.post("/images/generate", json={"prompt": "[sleep 0] \\u0000 hills"})
    assert response.status_code == 202, response.text
