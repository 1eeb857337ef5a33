"""CORS: the origins in SFUMATO_CORS_ORIGINS may call the API from a browser; preflights are
answered before authentication; with no origins configured, no CORS headers at all."""

from __future__ import annotations

import dataclasses

from starlette.testclient import TestClient

from gateway.app import create_app
from tests.support.service import Service

ALLOWED = "https://app.example.test"  # tests/conftest.py COMMON_ENV
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "x-api-key, content-type, idempotency-key",
}


def test_preflight_from_an_allowed_origin_needs_no_key(service: Service) -> None:
    with service.client() as client:
        response = client.options("/images/generate", headers={"Origin": ALLOWED, **PREFLIGHT})
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert "POST" in response.headers["access-control-allow-methods"]
    allowed_headers = response.headers["access-control-allow-headers"].lower()
    for header in ("x-api-key", "content-type", "idempotency-key"):
        assert header in allowed_headers


def test_answers_to_an_allowed_origin_expose_the_rate_limit_headers(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        answer = client.get("/account", headers={"Origin": ALLOWED})
        refused = client.get("/account", headers={"Origin": ALLOWED, "x-api-key": "sfm_wrong"})
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == ALLOWED
    exposed = answer.headers["access-control-expose-headers"].lower()
    assert "x-ratelimit-remaining" in exposed and "retry-after" in exposed
    # A browser app must be able to read the 401's envelope, too.
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == ALLOWED


def test_other_origins_get_no_cors_grant(service: Service, key: str) -> None:
    with service.client(key) as client:
        preflight = client.options(
            "/images/generate", headers={"Origin": "https://evil.example", **PREFLIGHT}
        )
        answer = client.get("/account", headers={"Origin": "https://evil.example"})
    assert preflight.status_code == 400
    assert "access-control-allow-origin" not in preflight.headers
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers


def test_no_origins_configured_means_no_cors(service: Service, key: str) -> None:
    settings = service.services.settings.model_copy(update={"cors_origins": ""})
    services = dataclasses.replace(service.services, settings=settings)
    app = create_app(dataclasses.replace(service.gateway, services=services, embedded_workers=None))
    client = TestClient(app, base_url="http://testserver/v1")  # no lifespan: no workers
    preflight = client.options("/account", headers={"Origin": ALLOWED, **PREFLIGHT})
    assert preflight.status_code == 401
    assert "access-control-allow-origin" not in preflight.headers
    answer = client.get("/account", headers={"Origin": ALLOWED, "x-api-key": key})
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers
