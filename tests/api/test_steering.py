"""Steering a create (issue 33) through HTTP, on the builtin pipelines: seeds that reproduce a
picture byte for byte and are reported on every result, negative prompts, the per-model ranges
of steps and guidance, a model per request (GET /v1/models), idempotency over the new fields,
masked edits; and a request without them behaving as before."""

from __future__ import annotations

import io
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from core.jobs.requests import EditRequest, GenerateRequest
from core.jobs.service import IdempotentRequest
from tests.support.http_jobs import wait_done
from tests.support.service import Service

# Beyond a signed 32-bit integer: the row's seed holds it (migration 0008).
BIG_SEED = 4_000_000_000
PROMPT = "a lighthouse on a cliff at dawn"


def generated(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    response = client.post("/images/generate", json={"prompt": PROMPT, "quality": "low", **fields})
    assert response.status_code == 202, response.text
    job = wait_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    return job


def png_of(job: dict[str, Any], index: int = 0) -> bytes:
    response = httpx.get(job["result"]["images"][index]["url"])
    assert response.status_code == 200
    return response.content


def refused(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, str]:
    response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    details: dict[str, str] = error["details"]
    return details


def test_a_seed_reproduces_the_picture_byte_for_byte_and_every_result_reports_its_seed(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        first = generated(client, seed=BIG_SEED, variations=2)
        again = generated(client, seed=BIG_SEED, variations=2)
        other = generated(client, seed=7)
        drawn = generated(client)
        replayed = generated(client, seed=drawn["result"]["seed"])
    assert first["result"]["seed"] == again["result"]["seed"] == BIG_SEED
    assert first["result"]["model"] == "builtin"
    assert [png_of(first, 0), png_of(first, 1)] == [png_of(again, 0), png_of(again, 1)]
    assert png_of(first, 0) != png_of(first, 1), "each variation has its own seed"
    assert png_of(other) != png_of(first)
    # A job made without a seed reports the one it drew, and that seed remakes it.
    assert isinstance(drawn["result"]["seed"], int)
    assert png_of(replayed) == png_of(drawn)


def test_the_builtin_painter_says_it_does_not_use_a_negative_prompt(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        job = generated(client, seed=3, negativePrompt="people, text")
        plain = generated(client, seed=3)
    assert "the builtin painter does not use a negative prompt" in job["notes"]
    assert png_of(job) == png_of(plain)


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"seed": -1}, "seed", "must be at least 0"),
        ({"seed": 2**32}, "seed", "must be at most 4294967295"),
        ({"seed": "12"}, "seed", "must be an integer"),
        ({"negativePrompt": "x" * 1001}, "negativePrompt", "must be at most 1000 characters"),
        ({"steps": 0}, "steps", "must be at least 1"),
        ({"loras": [{"name": "a"}] * 5}, "loras", "must have at most 4 items"),
        ({"loras": [{"name": "a", "scale": 3}]}, "loras[0].scale", "must be at most 2"),
        # Which model serves is the deployment's: the builtin one takes no steps or guidance.
        ({"steps": 4}, "steps", "the model builtin takes no steps"),
        ({"guidance": 7.5}, "guidance", "the model builtin takes no guidance"),
        ({"model": "sdxl"}, "model", "not served here; the models for generate are: builtin"),
        ({"loras": [{"name": "pixel-art"}]}, "loras[0].name", "no adapter 'pixel-art' fits"),
        # Strict validation still names an unknown field.
        ({"sed": 1}, "sed", "is not a known field"),
    ],
)
def test_steering_fields_are_bounded_and_refusals_name_them(
    service: Service, key: str, change: dict[str, Any], field: str, reason: str
) -> None:
    with service.client(key) as client:
        details = refused(client, "/images/generate", {"prompt": PROMPT, **change})
        assert details[field].startswith(reason), details
        assert client.get("/jobs").json()["data"] == []
    assert service.balance(key) == 1000


def test_models_lists_what_each_operation_can_run(service: Service, key: str) -> None:
    with service.client(key) as client:
        listed = client.get("/models")
        generate = client.get("/models", params={"operation": "generate"})
    assert listed.status_code == 200, listed.text
    operations = {model["operation"] for model in listed.json()["data"]}
    assert operations == {"generate", "edit", "reframe", "upscale", "animate", "transition"}
    assert generate.json()["data"] == [
        {
            "id": "builtin",
            "operation": "generate",
            "kind": "builtin",
            "default": True,
            "licence": "apache-2.0",
            "steps": None,
            "guidance": None,
            "negativePrompt": False,
            "loras": [],
            "mask": False,
        }
    ]
    assert httpx.get(f"{service.api}/models").status_code == 401


def test_a_model_named_runs_there(service: Service, key: str) -> None:
    with service.client(key) as client:
        named = generated(client, seed=11, model="builtin")
        default = generated(client, seed=11)
    assert named["result"]["model"] == "builtin"
    assert png_of(named) == png_of(default)


def test_idempotency_covers_the_steering_fields(service: Service, key: str) -> None:
    body = {"prompt": "[sleep 0.1] a quiet harbour", "seed": 5}
    with service.client(key) as client:
        headers = {"Idempotency-Key": "steering-1"}
        first = client.post("/images/generate", json=body, headers=headers)
        assert first.status_code == 202, first.text
        same = client.post("/images/generate", json=body, headers=headers)
        assert same.headers.get("Idempotent-Replayed") == "true"
        assert same.json()["data"]["id"] == first.json()["data"]["id"]
        other_seed = client.post("/images/generate", json={**body, "seed": 6}, headers=headers)
        assert other_seed.status_code == 422
        assert other_seed.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
        negative = {**body, "negativePrompt": "fog"}
        other = client.post("/images/generate", json=negative, headers=headers)
        assert other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_a_request_without_steering_hashes_as_it_always_did() -> None:
    """An Idempotency-Key sent before this change and retried after it still replays: the hash
    of a request without the extensions is of exactly the fields it always had."""
    request = GenerateRequest.model_validate({"prompt": "a quiet harbour"})
    assert request.wire() == {
        "prompt": "a quiet harbour",
        "aspectRatio": "1:1",
        "quality": "medium",
        "resolution": "1K",
        "styleId": None,
        "references": [],
        "variations": 1,
    }
    edit = EditRequest.model_validate(
        {"imageId": "3f2a9c4e-8b1d-4e6f-a7c2-5d9e0b1f4a63", "prompt": "stormy"}
    )
    assert set(edit.wire()) == {"imageId", "prompt", "styleId", "references"}
    seeded = GenerateRequest.model_validate({"prompt": "a quiet harbour", "seed": 0})
    assert seeded.wire()["seed"] == 0
    assert (
        IdempotentRequest.of("k", "/v1/images/generate", seeded).body_hash
        != IdempotentRequest.of("k", "/v1/images/generate", request).body_hash
    )


def _uploaded_png(client: httpx.Client, image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    presigned = client.post(
        "/uploads", json={"filename": "mask.png", "contentType": "image/png"}
    ).json()["data"]
    put = httpx.put(
        presigned["uploadUrl"], content=buffer.getvalue(), headers={"Content-Type": "image/png"}
    )
    assert put.status_code == 200
    completed = client.post(f"/uploads/{presigned['uploadId']}/complete")
    assert completed.status_code == 200, completed.text
    upload_id: str = presigned["uploadId"]
    return upload_id


def test_a_masked_builtin_edit_changes_only_the_white_of_the_mask(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        source = generated(client, seed=21)
        size = (source["result"]["images"][0]["width"], source["result"]["images"][0]["height"])
        mask = Image.new("L", size, 0)
        mask.paste(255, (0, 0, size[0] // 2, size[1]))
        body = {
            "imageId": source["id"],
            "prompt": "make it black and white",
            "mask": _uploaded_png(client, mask),
            "seed": 1,
        }
        created = client.post("/images/edit", json=body)
        assert created.status_code == 202, created.text
        edited = wait_done(client, created.json()["data"]["id"])
        small = _uploaded_png(client, Image.new("L", (64, 48), 255))
        wrong_size = refused(client, "/images/edit", {**body, "mask": small})
    assert edited["status"] == "completed", edited
    assert "applied inside the mask only" in edited["notes"]
    assert edited["result"]["seed"] == 1
    before = np.asarray(Image.open(io.BytesIO(png_of(source))).convert("RGB"), np.int16)
    after = np.asarray(Image.open(io.BytesIO(png_of(edited))).convert("RGB"), np.int16)
    half = size[0] // 2
    assert np.array_equal(after[:, half:], before[:, half:]), "outside the mask: untouched"
    assert np.abs(after[:, :half, 0] - after[:, :half, 2]).mean() < 2, "inside: grey"
    assert np.abs(before[:, :half, 0] - before[:, :half, 2]).mean() > 2
    assert wrong_size["mask"] == f"is 64x48; it must have the image's size, {size[0]}x{size[1]}"
