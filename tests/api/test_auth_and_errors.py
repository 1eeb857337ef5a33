"""Authentication and the error envelope, through HTTP."""

from __future__ import annotations

import httpx

from core.accounts import api_keys, authentication
from tests.support.service import Service

ENVELOPE_KEYS = {"code", "message", "details"}


def assert_envelope(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == ENVELOPE_KEYS
    assert body["error"]["code"] == code
    return body["error"]


def test_missing_malformed_and_unknown_keys_are_401(service: Service) -> None:
    with service.client() as client:
        for headers in (
            {},
            {"x-api-key": ""},
            {"x-api-key": "not-a-key"},
            {"x-api-key": "sfm_" + "x" * 43},
            {"authorization": "Basic Zm9vOmJhcg=="},
            {"authorization": "Bearer sfm_unknown"},
        ):
            error = assert_envelope(client.get("/account", headers=headers), 401, "UNAUTHORIZED")
            assert error["message"] == "Invalid API key"


def test_both_header_forms_work_and_x_api_key_wins(service: Service, key: str) -> None:
    with service.client() as client:
        assert client.get("/account", headers={"authorization": f"Bearer {key}"}).status_code == 200
        assert client.get("/account", headers={"x-api-key": key}).status_code == 200
        both_bad = client.get(
            "/account", headers={"x-api-key": "sfm_wrong", "authorization": f"Bearer {key}"}
        )
        assert_envelope(both_bad, 401, "UNAUTHORIZED")
        both_good = client.get(
            "/account", headers={"x-api-key": key, "authorization": "Bearer sfm_wrong"}
        )
        assert both_good.status_code == 200


def test_account_reports_user_plan_limits_and_credits(service: Service) -> None:
    key = service.new_key(plan="enterprise", credits=321)
    with service.client(key) as client:
        body = client.get("/account").json()["data"]
        assert body["email"].endswith("@test.local")
        assert len(body["userId"]) == 36
        assert body["credits"] == 321
        plan = body["plan"]
        assert (plan["id"], plan["tier"]) == ("enterprise", "enterprise")
        # tests/support/generous.toml's enterprise plan; a cap of 0 there means none (null).
        assert plan["limits"]["video"] is True
        assert plan["limits"]["dailyGenerationCap"] is None
        assert plan["limits"]["maxInflightImages"] >= 1
        # The balance follows the ledger: a job's reservation shows at once.
        client.post("/images/generate", json={"prompt": "[sleep 0] a lighthouse"})
        assert client.get("/account").json()["data"]["credits"] == service.balance(key) < 321


def test_key_states_take_effect_on_the_next_request(service: Service, key: str) -> None:
    db, events = service.services.db, service.services.events
    caller = authentication.authenticate(db, key)
    assert caller is not None
    with service.client(key) as client:
        assert client.get("/account").status_code == 200
        api_keys.set_key_state(db, events, caller.api_key_id, "deactivated")
        assert_envelope(client.get("/account"), 401, "UNAUTHORIZED")
        api_keys.set_key_state(db, events, caller.api_key_id, "active")
        assert client.get("/account").status_code == 200
        api_keys.set_key_state(db, events, caller.api_key_id, "revoked")
        assert_envelope(client.get("/account"), 401, "UNAUTHORIZED")


def test_callers_are_cached_until_a_credential_event(service: Service, key: str) -> None:
    """The gateway answers a known key from its cache (a state written by plain SQL, with no
    event, goes unseen); the credential event every key change publishes clears it."""
    from sqlalchemy import update

    from core.tables import ApiKey

    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    with service.client(key) as client:
        assert client.get("/account").status_code == 200
        with service.services.db.write() as session:
            session.execute(
                update(ApiKey).where(ApiKey.id == caller.api_key_id).values(state="revoked")
            )
        assert client.get("/account").status_code == 200
        service.services.events.publish_credentials_changed()
        assert_envelope(client.get("/account"), 401, "UNAUTHORIZED")


def test_expired_key_is_refused(service: Service) -> None:
    from datetime import timedelta

    from core.clock import utcnow
    from core.tables import ApiKey

    key = service.new_key()
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    with service.services.db.write() as session:
        row = session.get(ApiKey, caller.api_key_id)
        assert row is not None
        row.expires_at = utcnow() - timedelta(seconds=1)
    with service.client(key) as client:
        assert_envelope(client.get("/account"), 401, "UNAUTHORIZED")


def test_unknown_route_wrong_method_and_big_body_use_the_envelope(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        assert_envelope(client.get("/no-such-thing"), 404, "NOT_FOUND")
        assert_envelope(client.delete("/account"), 405, "METHOD_NOT_ALLOWED")
        huge = {"prompt": "x" * (70 * 1024)}
        assert_envelope(client.post("/images/generate", json=huge), 413, "PAYLOAD_TOO_LARGE")
        not_json = client.post(
            "/images/generate", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert_envelope(not_json, 400, "VALIDATION_ERROR")


def test_foreign_and_malformed_job_ids_are_404(service: Service, key: str) -> None:
    other = service.new_key()
    with service.client(other) as client:
        job = client.post("/images/generate", json={"prompt": "[sleep 0] mine"}).json()["data"]
    with service.client(key) as client:
        assert_envelope(client.get(f"/jobs/{job['id']}"), 404, "NOT_FOUND")
        assert_envelope(client.post(f"/jobs/{job['id']}/cancel"), 404, "NOT_FOUND")
        assert_envelope(client.get("/jobs/not-a-uuid"), 404, "NOT_FOUND")
        assert_envelope(client.get("/images/123"), 404, "NOT_FOUND")


def test_job_reads_resolve_only_their_type(service: Service, key: str) -> None:
    with service.client(key) as client:
        job = client.post("/images/generate", json={"prompt": "[sleep 0] typed"}).json()["data"]
        assert client.get(f"/images/{job['id']}").status_code == 200
        assert client.get(f"/jobs/{job['id']}").status_code == 200
        assert_envelope(client.get(f"/videos/{job['id']}"), 404, "NOT_FOUND")
        assert_envelope(client.get(f"/styles/extractions/{job['id']}"), 404, "NOT_FOUND")


def test_insufficient_credits_is_402_and_creates_nothing(service: Service) -> None:
    key = service.new_key(credits=1)
    with service.client(key) as client:
        response = client.post("/images/generate", json={"prompt": "a red barn"})
        error = assert_envelope(response, 402, "INSUFFICIENT_CREDITS")
        assert error["details"] == {"creditsRequired": 2, "creditsAvailable": 1}
        assert client.get("/jobs").json()["data"] == []
    assert service.balance(key) == 1
