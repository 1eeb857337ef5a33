"""The sign-in throttle's back-off (issue 31 M2) on both of the limiter's stores: in this process
(embedded mode) and in Redis (distributed). The HTTP behaviour is in
tests/dashboard/test_front_door.py; here windows of seconds let the back-off trip twice (the
seconds asked to wait may be one less than the back-off when the machine is slow)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from benchmarks.testkit.waits import wait_until
from core.service_config import RateLimits
from gateway.limits import Counts, ProcessCounts, RedisCounts, SignInThrottle
from tests.conftest import REDIS_URL

FAST = RateLimits(
    image="1/minute",
    video="1/minute",
    style="1/minute",
    upload="1/minute",
    default="1/minute",
    signin="100/minute",
    signin_address="100/hour",
    signin_account="2/3 seconds",
)


@pytest.fixture(params=["process", "redis"])
def counts(request: pytest.FixtureRequest) -> Iterator[Counts]:
    if request.param == "process":
        yield ProcessCounts()
        return
    if not REDIS_URL:
        pytest.skip("needs SFUMATO_TEST_REDIS_URL (set by .ci/run)")
    yield RedisCounts(REDIS_URL)


def test_an_accounts_back_off_spares_clean_addresses_and_doubles_at_each_trip(
    counts: Counts,
) -> None:
    throttle = SignInThrottle(counts, FAST, f"test-{uuid.uuid4().hex[:8]}")
    email = "owner@test.local"
    assert throttle.admit(email, "192.0.2.1") == 0
    throttle.failed(email, "192.0.2.1")
    throttle.failed(email, "192.0.2.2")  # the account's 2 in 3 seconds: the first trip
    assert 2 <= throttle.admit(email, "192.0.2.1") <= 3  # backs off the window, 3 s
    assert 1 <= throttle.admit(email, "192.0.2.2") <= 3
    assert throttle.admit(email, "192.0.2.3") == 0  # no failure from there: checked
    assert throttle.admit("someone@test.local", "192.0.2.1") == 0  # other accounts untouched
    wait_until(lambda: throttle.admit(email, "192.0.2.1") == 0, 10, "the first back-off to end")
    throttle.failed(email, "192.0.2.4")
    throttle.failed(email, "192.0.2.4")  # the second trip within the day: twice as long
    assert 5 <= throttle.admit(email, "192.0.2.4") <= 6
    assert 4 <= throttle.admit(email, "192.0.2.1") <= 6  # failed earlier today: refused too
    assert throttle.admit(email, "192.0.2.5") == 0
