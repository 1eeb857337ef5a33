"""Webhooks through the public surface (issue 34 items 1-6): a service in each mode sends its
jobs' events to a receiver on loopback, signed so that the Standard Webhooks library from PyPI
verifies them unchanged; retried on failure with the same webhook-id; never lost across a
restart; refused at create for a private address; filtered per webhook.

The services here may reach 127.0.0.1 (SFUMATO_FETCH_ALLOW, the fetcher's allow-list) and retry
within tenths of a second (the retry settings), so that nothing waits on real back-off."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.conftest import COMMON_ENV, fresh_postgres_database
from tests.support.http_jobs import create, wait_done
from tests.support.service import Mode, Service, free_port, running_service, wait_until
from tests.support.webhook_receiver import Receiver, webhook_receiver

FAST_RETRIES = {
    "SFUMATO_FETCH_ALLOW": "127.0.0.1",
    "SFUMATO_WEBHOOK_RETRY_BASE_SECONDS": "0.05",
    "SFUMATO_WEBHOOK_RETRY_MAX_DELAY_SECONDS": "0.2",
    "SFUMATO_WEBHOOK_POLL_SECONDS": "0.05",
    "SFUMATO_WEBHOOK_DISABLE_AFTER_SECONDS": "1",
}


@contextmanager
def hooked_mode(request: pytest.FixtureRequest) -> Iterator[Mode]:
    """The mode `request.param` names with fast retries and loopback allowed; a distributed
    one on a database of its own, where no other test deployment's deliverer (with another
    allow-list) claims its deliveries."""
    env = {**COMMON_ENV, **FAST_RETRIES}
    if request.param == "embedded":
        yield Mode("embedded", env, separate_workers=False)
        return
    with fresh_postgres_database() as database_url:
        env["SFUMATO_DATABASE_URL"] = database_url
        env["SFUMATO_BROKER_URL"] = request.getfixturevalue("redis_url")
        yield Mode("distributed", env, separate_workers=True)


@pytest.fixture(scope="module", params=["embedded", "distributed"])
def mode(request: pytest.FixtureRequest) -> Iterator[Mode]:
    with hooked_mode(request) as made:
        yield made


@pytest.fixture(params=["embedded", "distributed"])
def restartable(request: pytest.FixtureRequest) -> Iterator[Mode]:
    """A mode whose deployment the test stops and starts again, alone on its database."""
    with hooked_mode(request) as made:
        yield made


@pytest.fixture(scope="module")
def hooked(mode: Mode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with running_service(mode, tmp_path_factory.mktemp(f"webhooks-{mode.name}")) as service:
        yield service


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as listening:
        yield listening


def account_secret(client: httpx.Client) -> str:
    response = client.post("/webhooks/secret")
    assert response.status_code == 200, response.text
    secret: str = response.json()["data"]["secret"]
    assert secret.startswith("whsec_")
    return secret


def unique_path() -> str:
    return f"/hook-{os.urandom(4).hex()}"


def deliveries(client: httpx.Client, job_id: str) -> list[dict]:
    response = client.get(f"/jobs/{job_id}/deliveries")
    assert response.status_code == 200, response.text
    found: list[dict] = response.json()["data"]
    return found


def test_a_completed_job_is_sent_signed_as_the_standard_webhooks_library_verifies(
    hooked: Service, receiver: Receiver
) -> None:
    path = unique_path()
    key = hooked.new_key()
    with hooked.client(key) as client:
        secret = account_secret(client)
        job = create(client, "[sleep 0] a signed lighthouse", webhook={"url": receiver.url(path)})
        done = wait_done(client, job["id"])
        (sent,) = receiver.wait_for(path, 1)
        read = client.get(f"/jobs/{job['id']}").json()["data"]
    payload = Webhook(secret).verify(sent.body, sent.headers)
    assert payload["type"] == "job.completed"
    assert payload["data"] == read == done
    with hooked.client(key) as client:
        (delivery,) = deliveries(client, job["id"])
    assert sent.headers["webhook-id"] == delivery["id"]
    # Anyone else's secret does not verify it.
    with pytest.raises(Exception, match="signature"):
        Webhook("whsec_" + "QUJD" * 8).verify(sent.body, sent.headers)


def test_a_failing_receiver_gets_each_attempt_once_with_one_id_and_the_success_is_recorded(
    hooked: Service, receiver: Receiver
) -> None:
    path = unique_path()
    receiver.answer(path, 500, 500, 500)
    with hooked.client(hooked.new_key()) as client:
        account_secret(client)
        job = create(client, "[sleep 0] retried", webhook={"url": receiver.url(path)})
        wait_done(client, job["id"])
        received = receiver.wait_for(path, 4)
        (delivery,) = wait_until(
            lambda: [d for d in deliveries(client, job["id"]) if d["status"] == "delivered"],
            30,
            "the delivery recorded as delivered",
        )
    assert len(receiver.of(path)) == 4
    assert {item.headers["webhook-id"] for item in received} == {delivery["id"]}
    assert [attempt["statusCode"] for attempt in delivery["attempts"]] == [500, 500, 500, 200]
    assert delivery["event"] == "completed" and delivery["finishedAt"] is not None
    metrics = httpx.get(f"{hooked.metrics_url}/metrics").text
    assert 'sfumato_webhook_deliveries_total{outcome="retried"}' in metrics
    assert 'sfumato_webhook_deliveries_total{outcome="sent"}' in metrics
    assert "sfumato_webhook_delivery_latency_seconds_count" in metrics


def test_a_redirect_is_an_answer_not_followed_and_tried_again(
    hooked: Service, receiver: Receiver
) -> None:
    path = unique_path()
    receiver.answer(path, 302)
    with hooked.client(hooked.new_key()) as client:
        account_secret(client)
        job = create(client, "[sleep 0] redirected", webhook={"url": receiver.url(path)})
        wait_done(client, job["id"])
        receiver.wait_for(path, 2)
        (delivery,) = wait_until(
            lambda: [d for d in deliveries(client, job["id"]) if d["status"] == "delivered"],
            30,
            "delivered on the second attempt",
        )
    assert [attempt["statusCode"] for attempt in delivery["attempts"]] == [302, 200]
    assert delivery["attempts"][0]["error"] == "HTTP 302"
    assert receiver.of("/elsewhere") == []


@pytest.mark.parametrize(
    "url",
    [
        "https://10.1.2.3/hook",
        "https://192.168.0.10/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "ftp://example.com/hook",
    ],
)
def test_a_private_address_is_refused_at_create_and_nothing_is_charged(
    hooked: Service, url: str
) -> None:
    key = hooked.new_key()
    before = hooked.balance(key)
    with hooked.client(key) as client:
        account_secret(client)
        response = client.post(
            "/images/generate", json={"prompt": "nowhere", "webhook": {"url": url}}
        )
        assert response.status_code == 400, response.text
        assert "webhook.url" in response.json()["error"]["details"]
        endpoint = client.post("/webhooks", json={"url": url})
        assert endpoint.status_code == 400, endpoint.text
        assert client.get("/jobs").json()["data"] == []
        assert client.get("/webhooks").json()["data"] == []
    assert hooked.balance(key) == before


def test_a_webhook_on_a_create_needs_the_accounts_secret_first(hooked: Service) -> None:
    with hooked.client(hooked.new_key()) as client:
        response = client.post(
            "/images/generate",
            json={"prompt": "unsigned", "webhook": {"url": "http://127.0.0.1:9/hook"}},
        )
    assert response.status_code == 400
    assert "/v1/webhooks/secret" in response.json()["error"]["details"]["webhook"]


def test_each_webhook_gets_the_events_its_filter_names_and_no_other(
    hooked: Service, receiver: Receiver
) -> None:
    on_job, started_only, default, everything = (unique_path() for _ in range(4))
    with hooked.client(hooked.new_key()) as client:
        account_secret(client)
        made = [
            client.post(
                "/webhooks", json={"url": receiver.url(started_only), "events": ["started"]}
            ),
            client.post("/webhooks", json={"url": receiver.url(default)}),
            client.post(
                "/webhooks",
                json={
                    "url": receiver.url(everything),
                    "events": ["started", "progress", "completed", "failed"],
                },
            ),
        ]
        assert [response.status_code for response in made] == [201, 201, 201]
        job = create(
            client,
            "[sleep 1.5] filtered",
            webhook={"url": receiver.url(on_job), "events": ["started", "failed"]},
        )
        assert wait_done(client, job["id"])["status"] == "completed"
        wait_until(
            lambda: all(d["status"] == "delivered" for d in deliveries(client, job["id"])),
            30,
            "every delivery delivered",
        )

    def events(path: str) -> list[str]:
        return [item.json()["type"] for item in receiver.of(path)]

    assert events(on_job) == ["job.started"]
    assert events(started_only) == ["job.started"]
    assert events(default) == ["job.completed"]
    seen = events(everything)
    assert seen[0] == "job.started" and seen[-1] == "job.completed"
    assert "job.progress" in seen and "job.failed" not in seen
    # A progress event says the job moved on: a renewal of its lease alone sends none.
    progress = [
        item.json()["data"]["progress"]
        for item in receiver.of(everything)
        if item.json()["type"] == "job.progress"
    ]
    assert progress == sorted(set(progress)), progress


def test_endpoints_are_listed_without_secrets_rotated_and_deleted(
    hooked: Service, receiver: Receiver
) -> None:
    with hooked.client(hooked.new_key()) as client:
        made = client.post("/webhooks", json={"url": receiver.url(unique_path())})
        assert made.status_code == 201, made.text
        endpoint = made.json()["data"]
        assert endpoint["secret"].startswith("whsec_")
        assert endpoint["events"] == ["completed", "failed"]
        (listed,) = client.get("/webhooks").json()["data"]
        assert "secret" not in listed and listed["id"] == endpoint["id"]
        rotated = client.post(f"/webhooks/{endpoint['id']}/rotate-secret").json()["data"]
        assert rotated["secret"].startswith("whsec_") and rotated["secret"] != endpoint["secret"]
        assert client.delete(f"/webhooks/{endpoint['id']}").status_code == 204
        assert client.get("/webhooks").json()["data"] == []
        assert client.delete(f"/webhooks/{endpoint['id']}").status_code == 404
        # Another account's endpoint is not this one's to delete.
        theirs = hooked.client(hooked.new_key()).post(
            "/webhooks", json={"url": receiver.url(unique_path())}
        )
        assert client.delete(f"/webhooks/{theirs.json()['data']['id']}").status_code == 404


def test_an_endpoint_failing_for_too_long_is_disabled_saying_why_and_a_resend_sends_again(
    hooked: Service, receiver: Receiver
) -> None:
    path = unique_path()
    receiver.answer(path, *([503] * 10_000))
    with hooked.client(hooked.new_key()) as client:
        endpoint = client.post("/webhooks", json={"url": receiver.url(path)}).json()["data"]
        job = create(client, "[sleep 0] to a broken endpoint")
        wait_done(client, job["id"])
        disabled = wait_until(
            lambda: (
                client.get("/webhooks").json()["data"][0]["disabledAt"] is not None
                and client.get("/webhooks").json()["data"][0]
            ),
            60,
            "the endpoint disabled",
        )
        assert "HTTP 503" in disabled["disabledReason"]
        (delivery,) = wait_until(
            lambda: [d for d in deliveries(client, job["id"]) if d["status"] == "failed"],
            30,
            "the delivery failed",
        )
        tried = len(receiver.of(path))
        # Fixed, the owner rotates its secret (which enables it) and sends the event again.
        receiver.answer(path)
        client.post(f"/webhooks/{endpoint['id']}/rotate-secret")
        resent = client.post(f"/jobs/{job['id']}/deliveries/{delivery['id']}/resend")
        assert resent.status_code == 200, resent.text
        received = receiver.wait_for(path, tried + 1)
        assert received[-1].headers["webhook-id"] == delivery["id"]
        wait_until(
            lambda: deliveries(client, job["id"])[0]["status"] == "delivered", 30, "delivered"
        )


def test_deliveries_of_another_accounts_job_are_not_found(hooked: Service) -> None:
    with hooked.client(hooked.new_key()) as client:
        job = create(client, "[sleep 0] mine")
    with hooked.client(hooked.new_key()) as other:
        assert other.get(f"/jobs/{job['id']}/deliveries").status_code == 404


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_receiver_down_while_the_service_restarts_still_gets_every_event(
    restartable: Mode, tmp_path: Path
) -> None:
    mode = restartable
    port = free_port()
    url = f"http://127.0.0.1:{port}/down"
    with ExitStack() as first:
        service = first.enter_context(running_service(mode, tmp_path / "data"))
        key = service.new_key()
        with service.client(key) as client:
            account_secret_value = account_secret(client)
            jobs = [
                create(
                    client,
                    f"[sleep 0] while nobody listens {index}",
                    webhook={"url": url, "events": ["started", "completed"]},
                )
                for index in range(3)
            ]
            for job in jobs:
                wait_done(client, job["id"])
            # Every event tried at least once and refused (nothing listens), none given up.
            wait_until(
                lambda: (
                    all(
                        len(d["attempts"]) >= 1 and d["status"] == "pending"
                        for job in jobs
                        for d in deliveries(client, job["id"])
                    )
                    and sum(len(deliveries(client, job["id"])) for job in jobs) == 6
                ),
                60,
                "every delivery tried and waiting",
            )
    with webhook_receiver(port) as listening, running_service(mode, tmp_path / "data") as again:
        received = listening.wait_for("/down", 6)
        with again.client(key) as client:
            wait_until(
                lambda: all(
                    d["status"] == "delivered"
                    for job in jobs
                    for d in deliveries(client, job["id"])
                ),
                60,
                "every delivery recorded as delivered",
            )
    verifier = Webhook(account_secret_value)
    sent = {
        (payload["data"]["id"], payload["type"])
        for payload in (verifier.verify(item.body, item.headers) for item in received)
    }
    assert sent == {(job["id"], kind) for job in jobs for kind in ("job.started", "job.completed")}
