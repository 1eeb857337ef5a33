"""The OpenAPI document: valid, public, complete, and honoured by the running service."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path
from unittest.mock import ANY

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.routing import compile_path

from core.jobs.contract import TERMINAL
from tests.support.service import Service

SPEC_PATHS = {
    ("post", "/v1/images/generate"),
    ("post", "/v1/images/edit"),
    ("post", "/v1/images/resize"),
    ("post", "/v1/images/upscale"),
    ("get", "/v1/images/{id}"),
    ("post", "/v1/videos/image-to-video"),
    ("post", "/v1/videos/frames"),
    ("get", "/v1/videos/{id}"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{id}"),
    ("post", "/v1/jobs/{id}/cancel"),
    ("post", "/v1/styles/extract"),
    ("get", "/v1/styles/extractions/{id}"),
    ("get", "/v1/styles"),
    ("get", "/v1/styles/{id}"),
    ("post", "/v1/styles/{id}/search"),
    ("post", "/v1/uploads"),
    ("post", "/v1/uploads/{uploadId}/complete"),
    ("get", "/v1/account"),
}
SPEC_SCHEMAS = {
    "Job",
    "StyleDetail",
    "StyleSummary",
    "SearchHit",
    "SolidColour",
    "GradientColour",
    "TypographyItem",
    "GenerateRequest",
    "EditRequest",
    "ResizeRequest",
    "UpscaleRequest",
    "ImageToVideoRequest",
    "FramesRequest",
    "PresignRequest",
    "CompletedUpload",
    "AccountView",
    "ErrorEnvelope",
}


@pytest.fixture(scope="module")
def document(service: Service) -> dict:
    response = httpx.get(f"{service.api}/openapi.json")  # no key
    assert response.status_code == 200
    return response.json()


def test_document_is_valid_openapi(document: dict) -> None:
    validate(document)
    assert document["info"]["version"] == "v1"


def test_document_covers_every_spec_path_and_schema(document: dict) -> None:
    operations = {(method, path) for path, item in document["paths"].items() for method in item}
    assert operations >= SPEC_PATHS
    assert set(document["components"]["schemas"]) >= SPEC_SCHEMAS
    for path, item in document["paths"].items():
        for operation in item.values():
            assert "422" not in operation["responses"] or path.startswith(
                ("/v1/images", "/v1/videos", "/v1/styles/extract")
            )
            assert operation["security"]


def test_request_schemas_forbid_unknown_fields(document: dict) -> None:
    generate = document["components"]["schemas"]["GenerateRequest"]
    assert generate["additionalProperties"] is False
    assert generate["properties"]["variations"]["maximum"] == 4
    assert generate["required"] == ["prompt"]
    style = document["components"]["schemas"]["StyleDetail"]
    assert style["additionalProperties"] is False
    assert set(style["required"]) == {
        "id", "name", "url", "description", "tagline", "colours", "typography", "tone",
        "aesthetic", "logoUrl",
    }  # fmt: skip


def test_style_assets_extension_is_documented(document: dict) -> None:
    paths = document["paths"]
    assert {"get", "post"} <= set(paths["/v1/styles/{id}/assets"])
    link = document["components"]["schemas"]["LinkAssetsRequest"]
    assert link["properties"]["images"]["minItems"] == 1
    assert link["properties"]["images"]["maxItems"] == 20
    search = document["components"]["schemas"]["SearchRequest"]
    assert search["properties"]["limit"] == {
        "type": "integer", "maximum": 50, "minimum": 1, "title": "Limit", "default": 10
    }  # fmt: skip
    assert set(document["components"]["schemas"]["SearchHit"]["required"]) == {
        "id", "name", "url", "similarity"
    }  # fmt: skip


OPERATION_IDS = {
    ("post", "/v1/images/generate"): ("generateImage", "images"),
    ("post", "/v1/images/edit"): ("editImage", "images"),
    ("post", "/v1/images/resize"): ("resizeImage", "images"),
    ("post", "/v1/images/upscale"): ("upscaleImage", "images"),
    ("get", "/v1/images/{id}"): ("getImageJob", "images"),
    ("post", "/v1/videos/image-to-video"): ("imageToVideo", "videos"),
    ("post", "/v1/videos/frames"): ("framesToVideo", "videos"),
    ("get", "/v1/videos/{id}"): ("getVideoJob", "videos"),
    ("get", "/v1/jobs/{id}"): ("getJob", "jobs"),
    ("get", "/v1/jobs"): ("listJobs", "jobs"),
    ("post", "/v1/jobs/{id}/cancel"): ("cancelJob", "jobs"),
    ("get", "/v1/jobs/{id}/events"): ("streamJobEvents", "jobs"),
    ("post", "/v1/styles/extract"): ("extractStyle", "styles"),
    ("get", "/v1/styles/extractions/{id}"): ("getStyleExtraction", "styles"),
    ("get", "/v1/styles"): ("listStyles", "styles"),
    ("get", "/v1/styles/{id}"): ("getStyle", "styles"),
    ("post", "/v1/styles/{id}/search"): ("searchStyle", "styles"),
    ("post", "/v1/styles/{id}/assets"): ("addStyleAssets", "styles"),
    ("get", "/v1/styles/{id}/assets"): ("listStyleAssets", "styles"),
    ("post", "/v1/uploads"): ("createUpload", "uploads"),
    ("post", "/v1/uploads/{uploadId}/complete"): ("completeUpload", "uploads"),
    ("get", "/v1/account"): ("getAccount", "account"),
    ("post", "/v1/webhooks"): ("createWebhook", "webhooks"),
    ("get", "/v1/webhooks"): ("listWebhooks", "webhooks"),
    ("delete", "/v1/webhooks/{id}"): ("deleteWebhook", "webhooks"),
    ("post", "/v1/webhooks/{id}/rotate-secret"): ("rotateWebhookSecret", "webhooks"),
    ("post", "/v1/webhooks/secret"): ("rotateAccountWebhookSecret", "webhooks"),
    ("get", "/v1/jobs/{id}/deliveries"): ("listJobDeliveries", "jobs"),
    ("post", "/v1/jobs/{id}/deliveries/{deliveryId}/resend"): ("resendJobDelivery", "jobs"),
}


def test_operations_are_named_and_tagged_for_code_generators(document: dict) -> None:
    assert [tag["name"] for tag in document["tags"]] == [
        "images", "videos", "jobs", "styles", "uploads", "account", "models", "webhooks"
    ]  # fmt: skip
    assert document["servers"] == [{"url": "/", "description": ANY}]
    names = {
        (method, path): (operation["operationId"], operation["tags"])
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    for key, (operation_id, tag) in OPERATION_IDS.items():
        assert names[key] == (operation_id, [tag])
    ids = [operation_id for operation_id, _ in names.values()]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z]+(?:[A-Z][a-z0-9]*)*", operation_id) for operation_id in ids)


def test_every_error_status_carries_the_envelope_and_bodies_document_413_and_503(
    document: dict,
) -> None:
    for path, item in document["paths"].items():
        for operation in item.values():
            assert operation["summary"] and operation["description"], path
            responses = operation["responses"]
            assert {"400", "401", "404", "429", "500", "503"} <= set(responses), path
            for status, response in responses.items():
                if int(status) >= 400:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}, (path, status)
            body = operation.get("requestBody")
            if body is not None:
                assert "413" in responses, path
                assert body["content"]["application/json"]["example"], path


def test_the_event_stream_is_documented_as_text_event_stream(document: dict) -> None:
    operation = document["paths"]["/v1/jobs/{id}/events"]["get"]
    assert list(operation["responses"]["200"]["content"]) == ["text/event-stream"]
    # OpenAPI 3.1 reads an event stream's `schema` as one event's: the job, as JSON in `data`.
    event = operation["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert event["properties"]["data"]["contentSchema"] == {
        "$ref": "#/components/schemas/JobEnvelope"
    }
    assert "Last-Event-ID" in {parameter["name"] for parameter in operation["parameters"]}
    job = document["components"]["schemas"]["Job"]
    assert job["properties"]["progress"]["minimum"] == 0
    assert job["properties"]["progress"]["maximum"] == 1
    assert "progress" not in job["required"]  # a create's answer has no progress


GENERATOR_CONFIG = """\
post_hooks: []
project_name_override: sfumato_generated
package_name_override: sfumato_generated
"""


@pytest.mark.slow
def test_a_generated_client_creates_a_generation_and_long_polls_it_to_completed(
    service: Service, key: str, tmp_path: Path
) -> None:
    (tmp_path / "openapi.json").write_text(httpx.get(f"{service.api}/openapi.json").text)
    (tmp_path / "generator.yaml").write_text(GENERATOR_CONFIG)
    generator = Path(sys.executable).with_name("openapi-python-client")
    generated = subprocess.run(
        [
            str(generator), "generate", "--path", "openapi.json", "--meta", "none",
            "--config", "generator.yaml", "--output-path", "out/sfumato_generated",
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert "Warning" not in generated.stdout + generated.stderr
    sys.path.insert(0, str(tmp_path / "out"))
    try:
        package = importlib.import_module("sfumato_generated")
        generate_image = importlib.import_module("sfumato_generated.api.images.generate_image")
        get_job = importlib.import_module("sfumato_generated.api.jobs.get_job")
        models = importlib.import_module("sfumato_generated.models")
        # The base URL is the deployment's root: the document's paths carry /v1.
        with package.AuthenticatedClient(base_url=service.url, token=key) as client:
            created = generate_image.sync(
                client=client,
                body=models.GenerateRequest(prompt="[sleep 0.5] a generated client's lighthouse"),
            )
            assert isinstance(created, models.JobEnvelope), created
            job = created.data
            assert job.status == models.JobStatus.PENDING
            for _ in range(10):
                answer = get_job.sync(job.id, client=client, wait=models.GetJobWaitType0.TRUE)
                assert isinstance(answer, models.JobEnvelope), answer
                job = answer.data
                if job.status.value in TERMINAL:
                    break
            assert job.status == models.JobStatus.COMPLETED
            assert job.progress == 1.0
            assert len(job.result.images) == 1 and job.result.images[0].width == 1024
            missing = get_job.sync(
                "00000000-0000-4000-8000-000000000000", client=client
            )  # the error envelope parses too
            assert isinstance(missing, models.ErrorEnvelope)
            assert missing.error.code == "NOT_FOUND"
    finally:
        sys.path.remove(str(tmp_path / "out"))
        for name in [name for name in sys.modules if name.startswith("sfumato_generated")]:
            del sys.modules[name]


def test_no_other_get_route_has_a_job_reads_shape(document: dict) -> None:
    """The job reads are the app's own first routes (`install_job_reads`): a GET route of
    another router with one of their shapes (`/v1/images/{x}`, `/v1/images/some-word`) would
    never be reached."""
    reads = {"/v1/jobs/{id}", "/v1/images/{id}", "/v1/videos/{id}", "/v1/styles/extractions/{id}"}
    gets = {path for path, item in document["paths"].items() if "get" in item}
    assert reads <= gets
    for read in reads:
        read_pattern = compile_path(read)[0]
        sample = read.replace("{id}", "01a216c9-7f63-734e-a0de-c560d1cd2788")
        for other in gets - reads:
            assert not read_pattern.match(other.replace("{", "").replace("}", "")), other
            assert not compile_path(other)[0].match(sample), (read, other)
