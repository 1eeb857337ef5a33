"""Every field and bound of POST /images/generate, through HTTP."""

from __future__ import annotations

import pytest

from core.sizes import image_size
from tests.support.service import Service

VALID = {"prompt": "a lighthouse at dusk"}


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"prompt": ""}, "prompt", "must be at least 1 character(s)"),
        ({"prompt": "x" * 2001}, "prompt", "must be at most 2000 characters"),
        ({"prompt": 12}, "prompt", "must be a string"),
        ({"aspectRatio": "21:9"}, "aspectRatio", "must be one of"),
        ({"quality": "ultra"}, "quality", "must be one of"),
        ({"resolution": "8K"}, "resolution", "must be one of"),
        ({"variations": 0}, "variations", "must be at least 1"),
        ({"variations": 5}, "variations", "must be at most 4"),
        ({"variations": "2"}, "variations", "must be an integer"),
        ({"variations": 1.5}, "variations", "must be an integer"),
        ({"styleId": "nope"}, "styleId", "has an invalid format"),
        ({"references": ["a"] * 5}, "references", "must have at most 4 items"),
        ({"references": [""]}, "references[0]", "must be at least 1 character(s)"),
        ({"references": ["x" * 2049]}, "references[0]", "must be at most 2048 characters"),
        ({"colour": "red"}, "colour", "is not a known field"),
    ],
)
def test_generate_rejects_each_bad_field(
    service: Service, key: str, change: dict, field: str, reason: str
) -> None:
    body = {**VALID, **change}
    with service.client(key) as client:
        response = client.post("/images/generate", json=body)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert error["details"][field].startswith(reason), error["details"]
        assert client.get("/jobs").json()["data"] == []
    assert service.balance(key) == 1000


def test_prompt_is_required_and_body_must_be_an_object(service: Service, key: str) -> None:
    with service.client(key) as client:
        missing = client.post("/images/generate", json={"quality": "low"}).json()["error"]
        assert missing["details"] == {"prompt": "is required"}
        array = client.post("/images/generate", json=["prompt"]).json()["error"]
        assert array["code"] == "VALIDATION_ERROR"


def test_unresolvable_style_and_references_name_their_field(service: Service, key: str) -> None:
    body = {
        **VALID,
        "styleId": "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c",
        # Neither resolves: this machine is never fetched from, and the id names nothing.
        "references": ["https://127.0.0.1/a.png", "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4d"],
    }
    with service.client(key) as client:
        error = client.post("/images/generate", json=body).json()["error"]
    assert set(error["details"]) == {"styleId", "references[0]", "references[1]"}


def test_bounds_that_are_valid_are_accepted(service: Service, key: str) -> None:
    edge = {
        "prompt": "[sleep 0]" + "x" * 1991,
        "aspectRatio": "9:16",
        "quality": "low",
        "resolution": "1K",
        "variations": 4,
        "references": [],
    }
    with service.client(key) as client:
        response = client.post("/images/generate", json=edge)
    assert response.status_code == 202, response.text
    assert set(response.json()["data"]) == {"id", "type", "status", "createdAt"}


def test_sizes_follow_the_contract_formula() -> None:
    assert image_size("16:9", "1K") == (1360, 768)
    assert image_size("1:1", "2K") == (2048, 2048)
    assert image_size("8:1", "4K") == (11584, 1456)
    assert image_size("1:1", "1K") == (1024, 1024)
    for ratio in ("1:1", "3:2", "2:3", "4:3", "3:4", "4:5", "5:4", "16:9", "9:16", "21:9", "1:8"):
        for resolution in ("1K", "2K", "4K"):
            width, height = image_size(ratio, resolution)
            assert width % 16 == 0 and height % 16 == 0
