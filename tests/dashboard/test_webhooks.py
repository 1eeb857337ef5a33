"""The dashboard's webhooks over HTTP (issue 34 items 1, 4, 5): an endpoint added with its secret
shown once, disabled after failing with the reason on the page, and a job's deliveries on its
page with a resend that sends the event again, signed with the secret the page showed."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from core.accounts import api_keys
from tests.conftest import COMMON_ENV
from tests.dashboard.conftest import Person
from tests.support.http_jobs import create, wait_done
from tests.support.service import Mode, Service, running_service, wait_until
from tests.support.webhook_receiver import Receiver, webhook_receiver

pytestmark = pytest.mark.slow
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
SIGNIN = re.compile(r'name="signin_token" value="([^"]+)"')
SECRET = re.compile(r'value="(whsec_[^"]+)" data-webhook-secret')
ENDPOINT_ROW = re.compile(r'<tr data-endpoint-id="([^"]+)"')


@pytest.fixture(scope="module")
def dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The dashboard's service, reaching loopback, retrying at once and disabling an endpoint
    after a second of failures."""
    env = {
        **COMMON_ENV,
        "SFUMATO_FETCH_ALLOW": "127.0.0.1",
        "SFUMATO_TRUST_FORWARDED_HEADERS": "true",
        "SFUMATO_WEBHOOK_RETRY_BASE_SECONDS": "0.05",
        "SFUMATO_WEBHOOK_RETRY_MAX_DELAY_SECONDS": "0.2",
        "SFUMATO_WEBHOOK_POLL_SECONDS": "0.05",
        "SFUMATO_WEBHOOK_DISABLE_AFTER_SECONDS": "1",
    }
    mode = Mode("embedded", env, False)
    with running_service(mode, tmp_path_factory.mktemp("dash-webhooks")) as service:
        yield service


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as listening:
        yield listening


@contextmanager
def signed_in_client(dash: Service, who: Person) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=dash.url + "/dashboard", headers={"X-Forwarded-For": "10.9.0.1"}, timeout=30
    ) as client:
        token = SIGNIN.search(client.get("/sign-in").text)
        assert token is not None
        answer = client.post(
            "/sign-in",
            data={"email": who.email, "password": who.password, "signin_token": token[1]},
        )
        assert answer.status_code == 303, answer.text
        yield client


def csrf_of(client: httpx.Client) -> str:
    found = CSRF.search(client.get("/webhooks").text)
    assert found is not None
    return found[1]


def test_an_endpoint_from_the_dashboard_fails_is_disabled_with_its_reason_and_is_resent(
    dash: Service, person: Callable[..., Person], receiver: Receiver
) -> None:
    who = person()
    receiver.answer("/dash", *([503] * 10_000))
    with signed_in_client(dash, who) as page:
        made = page.post(
            "/webhooks",
            data={
                "csrf_token": csrf_of(page),
                "url": receiver.url("/dash"),
                "events": ["completed"],
            },
        )
        assert made.status_code == 201, made.text
        first_secret = SECRET.search(made.text)
        assert first_secret is not None
        listed = page.get("/webhooks").text
        assert first_secret[1] not in listed and receiver.url("/dash") in listed
        endpoint_row = ENDPOINT_ROW.search(listed)
        assert endpoint_row is not None
        endpoint_id = endpoint_row[1]

        key = api_keys.create_key(dash.services.db, who.email, "api", None).plaintext
        with dash.client(key) as api:
            job = create(api, "[sleep 0] to the dashboard's endpoint")
            wait_done(api, job["id"])
        reason = wait_until(
            lambda: re.search(r"data-disabled-reason>([^<]+)<", page.get("/webhooks").text),
            60,
            "the endpoint disabled, its reason shown",
        )
        assert "HTTP 503" in html.unescape(reason[1])
        job_page = wait_until(
            lambda: (
                (text := page.get(f"/jobs/{job['id']}").text) and "state-failed" in text and text
            ),
            30,
            "the job's delivery shown failed",
        )
        assert "503" in job_page and "Resend" in job_page
        delivery = re.search(r'data-delivery-id="([^"]+)"', job_page)
        assert delivery is not None

        # Fixed: a new secret enables it, and the resend goes out signed with it.
        receiver.answer("/dash")
        rotated = page.post(f"/webhooks/{endpoint_id}/rotate", data={"csrf_token": csrf_of(page)})
        new_secret = SECRET.search(rotated.text)
        assert new_secret is not None and new_secret[1] != first_secret[1]
        tried = len(receiver.of("/dash"))
        resent = page.post(
            f"/jobs/{job['id']}/deliveries/{delivery[1]}/resend",
            data={"csrf_token": csrf_of(page)},
        )
        assert resent.status_code == 303
        last = receiver.wait_for("/dash", tried + 1)[-1]
        payload = Webhook(new_secret[1]).verify(last.body, last.headers)
        assert payload["data"]["id"] == job["id"] and payload["type"] == "job.completed"
        wait_until(
            lambda: "state-delivered" in page.get(f"/jobs/{job['id']}").text, 30, "delivered"
        )
