"""Retries through a faulty network (tests/support/proxy.py) in front of the real server: a lost
answer to a create is retried with its Idempotency-Key and makes one job; 5xx and 429 are
retried (Retry-After honoured), within bounds; the wait falls back to long-polls when the event
stream is missing or breaks."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from benchmarks.testkit.waits import free_port
from sfumato_client import (
    APIConnectionError,
    Client,
    InternalServerError,
    JobData,
    RateLimitError,
    UsageLimitError,
)
from tests.support.proxy import FaultyProxy, faulty_proxy
from tests.support.service import Service

pytestmark = pytest.mark.slow


@pytest.fixture
def proxy(service: Service) -> Iterator[FaultyProxy]:
    with faulty_proxy(service.url) as running:
        yield running


def test_a_lost_create_answer_is_retried_into_the_same_single_job(
    service: Service, key: str, proxy: FaultyProxy
) -> None:
    proxy.drop_response("/images/generate")
    balance = service.balance(key)
    with Client(proxy.url + "/v1", key) as client:
        job = client.images.generate("[sleep 0.1] once")
        assert proxy.seen.count("/v1/images/generate") == 2
        assert [listed.id for listed in client.jobs.list()] == [job.id]
        charged = balance - service.balance(key)
        # The price of exactly one generation: a second identical create costs as much again.
        client.images.generate("[sleep 0.1] twice")
        assert balance - service.balance(key) == 2 * charged > 0


def test_5xx_and_429_are_retried_honouring_retry_after(key: str, proxy: FaultyProxy) -> None:
    proxy.answer("/account", 503, error={"code": "INTERNAL_ERROR", "message": "down"})
    proxy.answer(
        "/account",
        429,
        headers={"Retry-After": "1"},
        error={"code": "RATE_LIMIT_ERROR", "message": "Rate limit exceeded"},
    )
    with Client(proxy.url + "/v1", key) as client:
        started = time.monotonic()
        assert client.account.get().email
        assert time.monotonic() - started >= 1
    assert proxy.seen.count("/v1/account") == 3


def test_retries_are_bounded_and_configurable(key: str, proxy: FaultyProxy) -> None:
    proxy.answer(
        "/account",
        429,
        headers={"Retry-After": "7"},
        error={"code": "RATE_LIMIT_ERROR", "message": "Rate limit exceeded"},
        times=None,
    )
    with (
        Client(proxy.url + "/v1", key, max_retries=0) as client,
        pytest.raises(RateLimitError) as limited,
    ):
        client.account.get()
    assert limited.value.retry_after == 7 and limited.value.status == 429
    proxy.answer("/jobs", 503, times=None)
    with (
        Client(proxy.url + "/v1", key, max_retries=2) as client,
        pytest.raises(InternalServerError),
    ):
        list(client.jobs.list())
    assert proxy.seen.count("/v1/jobs?limit=50") == 3


def test_a_retry_after_beyond_reason_is_raised_not_slept(key: str, proxy: FaultyProxy) -> None:
    proxy.answer(
        "/account",
        429,
        headers={"Retry-After": "3600"},
        error={"code": "USAGE_LIMIT_EXCEEDED", "message": "daily cap"},
    )
    started = time.monotonic()
    with Client(proxy.url + "/v1", key) as client, pytest.raises(UsageLimitError) as capped:
        client.account.get()
    assert capped.value.retry_after == 3600 and time.monotonic() - started < 5


def test_an_unreachable_server_is_a_connection_error() -> None:
    with (
        Client(f"http://127.0.0.1:{free_port()}/v1", "key", max_retries=1) as client,
        pytest.raises(APIConnectionError) as unreachable,
    ):
        client.account.get()
    assert unreachable.value.status is None


def test_wait_long_polls_where_the_server_has_no_event_stream(key: str, proxy: FaultyProxy) -> None:
    proxy.answer("/events", 404, error={"code": "NOT_FOUND", "message": "Not found"}, times=None)
    seen: list[JobData] = []
    with Client(proxy.url + "/v1", key) as client:
        job = client.images.generate("[sleep 0.5] polled")
        done = job.wait(on_progress=seen.append)
    assert done.status == "completed" and seen[-1].status == "completed"
    assert any(path.endswith("?wait=true") for path in proxy.seen)


def test_wait_survives_a_broken_event_stream(key: str, proxy: FaultyProxy) -> None:
    proxy.drop_response("/events")
    with Client(proxy.url + "/v1", key) as client:
        done = client.images.generate("[sleep 0.5] streamed").wait()
    assert done.status == "completed" and done.progress == 1
    assert sum(path.endswith("/events") for path in proxy.seen) >= 2
