"""Credits, plans, rate limits and idempotency through HTTP (SPEC.md Errors and Limits)."""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import redis
from limits import parse
from limits.storage import storage_from_string

from benchmarks.testkit.outages import tcp_proxy
from benchmarks.testkit.waits import wait_until
from core.accounts import authentication
from core.accounts import service as accounts
from core.jobs import service as jobs_service
from gateway import limits as gateway_limits
from gateway.limits import BucketRate, RedisCounts
from tests.conftest import COMMON_ENV
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.service import Mode, Service, running_service

GENERATE = {"prompt": "[sleep 0] limits"}


def post_generate(client: httpx.Client, body: dict, **headers: str) -> httpx.Response:
    return client.post("/images/generate", json=body, headers=headers)


def job_ids(client: httpx.Client) -> list[str]:
    return [job["id"] for job in client.get("/jobs", params={"limit": 50}).json()["data"]]


# Credits


def test_fifty_concurrent_creates_against_ten_creates_of_credit_make_exactly_ten(
    service: Service,
) -> None:
    key = service.new_key(credits=20)  # a medium 1K image costs 2
    barrier = threading.Barrier(50)

    def attempt(_: int) -> int:
        with service.client(key) as client:
            barrier.wait()
            return post_generate(client, GENERATE).status_code

    with ThreadPoolExecutor(50) as pool:
        codes = list(pool.map(attempt, range(50)))
    assert sorted(codes) == [202] * 10 + [402] * 40
    assert service.balance(key) == 0
    with service.client(key) as client:
        assert len(job_ids(client)) == 10
        refused = post_generate(client, GENERATE).json()["error"]
    assert refused == {
        "code": "INSUFFICIENT_CREDITS",
        "message": "Insufficient credits",
        "details": {"creditsRequired": 2, "creditsAvailable": 0},
    }


def test_ledger_records_every_movement_and_matches_the_balance(service: Service) -> None:
    key = service.new_key(credits=100)
    with service.client(key) as client:
        wait_done(client, create(client, "[sleep 0] kept", quality="high")["id"])
        wait_done(client, create(client, "[fail] refunded")["id"])
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    statement = accounts.statement(service.services.db, caller.email)
    assert [entry.kind for entry in statement.entries] == [
        "grant", "reserve", "settle", "reserve", "refund",
    ]  # fmt: skip
    assert statement.consistent and statement.account.credit_balance == 100 - 4


# Plans


def test_concurrent_limit_is_429_with_limit_and_in_flight(service: Service) -> None:
    key = service.new_key(plan="free")
    with service.client(key) as client:
        running = [create(client, "[sleep 5] hold a slot")["id"] for _ in range(2)]
        refused = post_generate(client, GENERATE)
        assert refused.status_code == 429
        assert refused.json()["error"] == {
            "code": "CONCURRENT_LIMIT_REACHED",
            "message": (
                "Too many generations in flight; poll the existing jobs before starting more"
            ),
            "details": {"limit": 2, "inFlight": 2},
        }
        assert service.balance(key) == 1000 - 4, "a refused create reserves nothing"
        for job_id in running:
            client.post(f"/jobs/{job_id}/cancel")
        assert post_generate(client, GENERATE).status_code == 202


def test_daily_cap_is_429_with_retry_after_to_midnight_and_failures_do_not_count(
    service: Service,
) -> None:
    key = service.new_key(plan="tiny")  # daily_generation_cap = 3
    with service.client(key) as client:
        wait_done(client, create(client, "[fail] does not count")["id"])
        for index in range(3):
            wait_done(client, create(client, f"[sleep 0] {index}")["id"])
        refused = post_generate(client, GENERATE)
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "USAGE_LIMIT_EXCEEDED"
    assert error["details"] == {"dailyLimit": 3}
    retry_after = int(refused.headers["Retry-After"])
    assert abs(retry_after - math.ceil((midnight - now).total_seconds())) <= 5


def test_a_plan_without_video_refuses_video_jobs(service: Service) -> None:
    """The plan rule itself, in the create service every video endpoint calls: a job of the video
    queue is refused before anything is charged. The HTTP answer (402 SUBSCRIPTION_REQUIRED) is
    checked in tests/api/test_videos.py."""
    key = service.new_key(plan="free")
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    video = jobs_service.NewJob("video.generate", "animate", "video", {"prompt": "x"}, price=1)
    with pytest.raises(jobs_service.SubscriptionRequired):
        jobs_service.insert_pending(service.services.db, caller, video)
    assert service.balance(key) == 1000


# Idempotency


def test_idempotent_replay_returns_the_original_job_and_charges_nothing(service: Service) -> None:
    key = service.new_key()
    with service.client(key) as client:
        first = post_generate(client, GENERATE, **{"Idempotency-Key": "order-17"})
        again = post_generate(client, GENERATE, **{"Idempotency-Key": "order-17"})
        assert first.status_code == again.status_code == 202
        assert "Idempotent-Replayed" not in first.headers
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json()["data"]["id"] == first.json()["data"]["id"]
        assert len(job_ids(client)) == 1
        other_body = post_generate(
            client, {**GENERATE, "quality": "low"}, **{"Idempotency-Key": "order-17"}
        )
        assert other_body.status_code == 422
        assert other_body.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert service.balance(key) == 1000 - 2
    other_key = service.new_key()
    with service.client(other_key) as client:
        own = post_generate(client, GENERATE, **{"Idempotency-Key": "order-17"})
        assert own.status_code == 202
        assert own.json()["data"]["id"] != first.json()["data"]["id"]


def test_ten_concurrent_requests_with_one_key_create_one_job(service: Service) -> None:
    key = service.new_key()
    barrier = threading.Barrier(10)

    def attempt(_: int) -> tuple[int, str]:
        with service.client(key) as client:
            barrier.wait()
            response = post_generate(client, GENERATE, **{"Idempotency-Key": "same"})
            return response.status_code, response.json()["data"]["id"]

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(attempt, range(10)))
    assert {code for code, _ in results} == {202}
    assert len({job_id for _, job_id in results}) == 1
    assert service.balance(key) == 1000 - 2


@pytest.mark.parametrize(
    "bad_key", ["x" * 256, "", "caf\u00e9", "tab\there"], ids=["long", "empty", "accent", "tab"]
)
def test_malformed_idempotency_keys_are_400(service: Service, key: str, bad_key: str) -> None:
    with service.client(key) as client:
        response = client.post(
            "/images/generate",
            json=GENERATE,
            headers={"Idempotency-Key": bad_key.encode("utf-8")},
        )
        assert response.status_code == 400
        assert set(response.json()["error"]["details"]) == {"Idempotency-Key"}
        assert job_ids(client) == []


def test_idempotency_keys_expire_after_a_day_and_are_purged(service: Service) -> None:
    key = service.new_key()
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    body_claim = jobs_service.IdempotentRequest("old", "/v1/images/generate", "hash")
    long_ago = datetime.now(UTC) - timedelta(hours=25)
    old, _ = jobs_service.insert_pending(
        service.services.db,
        caller,
        jobs_service.NewJob("image.generate", "generate", "image", {"prompt": "x"}, price=0),
        body_claim,
        now=long_ago,
    )
    with service.client(key) as client:
        fresh = post_generate(client, GENERATE, **{"Idempotency-Key": "old"})
        assert fresh.status_code == 202
        assert "Idempotent-Replayed" not in fresh.headers
        assert fresh.json()["data"]["id"] != old.id
    assert jobs_service.purge_idempotency_records(service.services.db) == 0
    jobs_service.insert_pending(
        service.services.db,
        caller,
        jobs_service.NewJob("image.generate", "generate", "image", {"prompt": "y"}, price=0),
        jobs_service.IdempotentRequest("older", "/v1/images/generate", "hash"),
        now=long_ago,
    )
    assert jobs_service.purge_idempotency_records(service.services.db) == 1


def test_idempotency_key_used_on_another_endpoint_is_reused(service: Service, key: str) -> None:
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    new = jobs_service.NewJob("image.generate", "generate", "image", {"prompt": "x"}, price=0)
    jobs_service.insert_pending(
        service.services.db, caller, new, jobs_service.IdempotentRequest("k", "/v1/a", "h")
    )
    with pytest.raises(jobs_service.IdempotencyKeyReused):
        jobs_service.insert_pending(
            service.services.db, caller, new, jobs_service.IdempotentRequest("k", "/v1/b", "h")
        )


# Rate limits (the shipped defaults, on a service of their own)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0  # on a minute boundary

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def default_limits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    env = {name: value for name, value in COMMON_ENV.items() if name != "SFUMATO_CONFIG_FILE"}
    data_dir: Path = tmp_path_factory.mktemp("default-limits")
    with running_service(Mode("embedded", env, separate_workers=False), data_dir) as service:
        yield service


@pytest.fixture
def clock(default_limits: Service) -> Iterator[FakeClock]:
    fake = FakeClock()
    original = default_limits.gateway.limiter.clock
    default_limits.gateway.limiter.clock = fake
    try:
        yield fake
    finally:
        default_limits.gateway.limiter.clock = original


def test_every_limited_answer_carries_the_window(default_limits: Service, clock: FakeClock) -> None:
    key = default_limits.new_key()
    clock.now += 15
    with default_limits.client(key) as client:
        first = client.get("/account")
        second = client.get("/account")
    assert first.headers["X-RateLimit-Limit"] == "120"
    assert first.headers["X-RateLimit-Remaining"] == "119"
    assert second.headers["X-RateLimit-Remaining"] == "118"
    assert first.headers["X-RateLimit-Reset"] == "45"
    unauthorised = httpx.get(f"{default_limits.api}/account")
    assert unauthorised.status_code == 401
    assert "X-RateLimit-Limit" not in unauthorised.headers


def test_default_bucket_refuses_the_121st_request_until_the_window_rolls(
    default_limits: Service, clock: FakeClock
) -> None:
    key = default_limits.new_key()
    other = default_limits.new_key()
    with default_limits.client(key) as client, default_limits.client(other) as other_client:
        for _ in range(120):
            assert client.get("/account").status_code == 200
        clock.now += 20
        refused = client.get("/account")
        assert refused.status_code == 429
        assert refused.json() == {
            "error": {"code": "RATE_LIMIT_ERROR", "message": "Rate limit exceeded", "details": None}
        }
        assert refused.headers["Retry-After"] == "40"
        assert refused.headers["X-RateLimit-Remaining"] == "0"
        assert other_client.get("/account").status_code == 200, "limits are per key"
        clock.now += 40
        assert client.get("/account").status_code == 200


def test_image_creates_have_their_own_bucket_of_20(
    default_limits: Service, clock: FakeClock
) -> None:
    key = default_limits.new_key(credits=10_000, plan="enterprise")
    with default_limits.client(key) as client:
        for _ in range(20):
            response = post_generate(client, {"prompt": "[sleep 0] r", "quality": "low"})
            assert response.status_code == 202, response.text
        refused = post_generate(client, {"prompt": "[sleep 0] r", "quality": "low"})
        assert refused.status_code == 429
        assert refused.headers["X-RateLimit-Limit"] == "20"
        assert int(refused.headers["Retry-After"]) >= 1
        assert client.get("/account").headers["X-RateLimit-Limit"] == "120"


def test_a_held_long_poll_counts_once(default_limits: Service, clock: FakeClock) -> None:
    key = default_limits.new_key()
    with default_limits.client(key) as client:
        job = create(client, "[sleep 1] watched")
        before = int(client.get("/account").headers["X-RateLimit-Remaining"])
        held = client.get(f"/jobs/{job['id']}", params={"wait": "true"})
        assert held.json()["data"]["status"] == "completed"
        assert int(held.headers["X-RateLimit-Remaining"]) == before - 1
        wait_until(lambda: status_of(client, job["id"]) == "completed", 5, "done")


@pytest.mark.parametrize("rate", ["100/minute", "5 per 2 seconds", "1000/hour"])
def test_window_keys_are_limits_own(rate: str) -> None:
    """The counters' keys are made from parts built once per bucket: they must stay the very
    keys `limits` makes, which gateways of the last release count in on the same Redis."""
    item = parse(rate)
    bucket = BucketRate.of(item, "ns-x", "default")
    assert bucket.key("key-1", 42) == item.key_for("ns-x", "default", "key-1", "42")
    assert (bucket.limit, bucket.seconds) == (item.amount, item.get_expiry())


# Counts in Redis (distributed mode)


@pytest.mark.distributed
def test_redis_counts_continue_the_counters_limits_kept(redis_url: str) -> None:
    """Gateways of the last release counted through `limits`' Redis storage: a rolling upgrade
    must count on in the same counters, with the same expiry."""
    key = f"test/{os.urandom(6).hex()}/default/1/1/minute"
    old_release = storage_from_string(redis_url)
    assert old_release.incr(key, 60) == 1
    counts = RedisCounts(redis_url)
    assert counts.incr(key, 60) == 2

    async def in_loop() -> int:
        return await counts.incr_in_loop(key, 60)

    assert asyncio.run(in_loop()) == 3
    assert old_release.get(key) == 3
    assert 0 < redis.Redis.from_url(redis_url).ttl(f"LIMITS:{key}") <= 60


@pytest.mark.distributed
def test_concurrent_counts_are_exact_and_share_one_round_trip(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    key = f"test/{os.urandom(6).hex()}/default/1/1/minute"
    other = f"test/{os.urandom(6).hex()}/default/2/1/minute"
    counts = RedisCounts(redis_url)

    def scripts_run() -> int:
        return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

    async def hits() -> tuple[list[int], list[int], int]:
        await counts.incr_in_loop(other, 60)  # the loop's client connected, its script loaded
        before = scripts_run()
        answers = await asyncio.gather(
            *(counts.incr_in_loop(key if index % 4 else other, 60) for index in range(200))
        )
        mine = [count for index, count in enumerate(answers) if index % 4]
        theirs = [count for index, count in enumerate(answers) if not index % 4]
        return mine, theirs, scripts_run() - before

    mine, theirs, scripts = asyncio.run(hits())
    assert sorted(mine) == list(range(1, 151))
    assert sorted(theirs) == list(range(2, 52))
    assert scripts == 1, f"200 counts of one pass ran the script {scripts} times"
    assert 0 < client.ttl(f"LIMITS:{key}") <= 60


@pytest.mark.distributed
def test_a_count_redis_never_answers_fails_in_time_and_the_next_one_counts(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis that keeps the connection but stops answering holds a request's count for
    `REDIS_COUNT_TIMEOUT_SECONDS` at most, then fails as Redis being unavailable (the middleware
    lets the request through uncounted); the next count goes through on a new connection. (The
    limit is shortened here: the suite's time.)"""
    limit = 1
    monkeypatch.setattr(gateway_limits, "REDIS_COUNT_TIMEOUT_SECONDS", limit)
    target = urlsplit(redis_url)
    key = f"test/{os.urandom(6).hex()}/default/1/1/minute"
    with tcp_proxy(target.hostname or "127.0.0.1", target.port or 6379) as proxy:
        counts = RedisCounts(urlunsplit(target._replace(netloc=f"127.0.0.1:{proxy.port}")))

        async def hits() -> tuple[float, int]:
            assert await counts.incr_in_loop(key, 60) == 1
            proxy.silence_on(b"EVALSHA")
            started = time.monotonic()
            with pytest.raises(redis.RedisError):
                await counts.incr_in_loop(key, 60)
            waited = time.monotonic() - started
            return waited, await counts.incr_in_loop(key, 60)

        waited, next_count = asyncio.run(hits())
    assert proxy.tripped.is_set()
    assert limit <= waited < limit + 2
    assert next_count == 2, "the unanswered count never reached Redis"
