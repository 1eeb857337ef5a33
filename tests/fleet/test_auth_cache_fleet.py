"""Gateways cache the callers of the keys they saw (core/accounts/callers.py); a change of a key
or an account still takes effect on the very next request on every gateway, through the
credential event the change publishes on the Redis bus. Real gateway processes, PostgreSQL and
Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from sqlalchemy import update

from benchmarks.testkit.outages import tcp_proxy
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.clock import utcnow
from core.tables import ApiKey
from tests.conftest import COMMON_ENV
from tests.support.fleet import Fleet, running_fleet

pytestmark = [pytest.mark.slow, pytest.mark.whole_machine, pytest.mark.distributed]


@pytest.fixture(scope="module")
def fleet(
    postgres_database: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    env = {
        **COMMON_ENV,
        "SFUMATO_DATABASE_URL": postgres_database,
        "SFUMATO_BROKER_URL": redis_url,
    }
    with running_fleet(env, tmp_path_factory.mktemp("auth-cache"), gateways=2) as fleet:
        yield fleet


def statuses(fleet: Fleet, key: str) -> list[int]:
    """`GET /v1/account`'s status on each gateway, twice (the second from the cache if any)."""
    answers = []
    for gateway in fleet.gateways:
        with fleet.client(gateway, key) as client:
            answers += [client.get("/account").status_code for _ in range(2)]
    return answers


def key_id_of(fleet: Fleet, key: str) -> str:
    caller = authentication.authenticate(fleet.services.db, key)
    assert caller is not None
    return caller.api_key_id


def test_a_key_deactivated_reactivated_and_revoked_on_every_gateway_at_once(fleet: Fleet) -> None:
    key = fleet.new_key()
    key_id = key_id_of(fleet, key)
    db, events = fleet.services.db, fleet.services.events
    assert statuses(fleet, key) == [200] * 4
    api_keys.set_key_state(db, events, key_id, "deactivated")
    assert statuses(fleet, key) == [401] * 4
    api_keys.set_key_state(db, events, key_id, "active")
    assert statuses(fleet, key) == [200] * 4
    api_keys.set_key_state(db, events, key_id, "revoked")
    assert statuses(fleet, key) == [401] * 4


def test_the_cache_answers_and_the_credential_event_clears_it(fleet: Fleet) -> None:
    """A state written behind the service's back (plain SQL, no event) is not seen while the
    key is cached: what refuses a deactivated key on the next request is the event."""
    key = fleet.new_key()
    key_id = key_id_of(fleet, key)
    assert statuses(fleet, key) == [200] * 4
    with fleet.services.db.write() as session:
        session.execute(update(ApiKey).where(ApiKey.id == key_id).values(state="deactivated"))
    assert statuses(fleet, key) == [200] * 4
    fleet.services.events.publish_credentials_changed()
    assert statuses(fleet, key) == [401] * 4


def test_a_plan_change_shows_on_the_next_request_on_every_gateway(fleet: Fleet) -> None:
    key = fleet.new_key(plan="pro")
    email = authentication.authenticate(fleet.services.db, key).email  # type: ignore[union-attr]
    for gateway in fleet.gateways:
        with fleet.client(gateway, key) as client:
            assert client.get("/account").json()["data"]["plan"]["id"] == "pro"
    accounts.set_plan(fleet.services.db, fleet.services.events, email, "enterprise")
    for gateway in fleet.gateways:
        with fleet.client(gateway, key) as client:
            assert client.get("/account").json()["data"]["plan"]["id"] == "enterprise"


def test_a_cached_key_is_refused_once_it_expires(fleet: Fleet) -> None:
    key = fleet.new_key()
    key_id = key_id_of(fleet, key)
    expires_at = utcnow() + timedelta(seconds=3)
    with fleet.services.db.write() as session:
        session.execute(update(ApiKey).where(ApiKey.id == key_id).values(expires_at=expires_at))
    assert statuses(fleet, key) == [200] * 4
    time.sleep(max(0.0, (expires_at - utcnow()).total_seconds()) + 0.1)
    assert statuses(fleet, key) == [401] * 4


def test_a_database_outage_while_recording_a_keys_use_answers_503(
    postgres_database: str, redis_url: str, tmp_path: Path
) -> None:
    target = urlsplit(postgres_database)
    with tcp_proxy(target.hostname or "127.0.0.1", target.port or 5432) as proxy:
        proxied = urlunsplit(target._replace(netloc=f"{target.username}@127.0.0.1:{proxy.port}"))
        env = {**COMMON_ENV, "SFUMATO_DATABASE_URL": proxied, "SFUMATO_BROKER_URL": redis_url}
        with running_fleet(env, tmp_path, gateways=1) as fleet:
            gateway = fleet.gateways[0]
            # A new key was never used: its first request records the use.
            key = fleet.new_key()
            proxy.cut_on(b"UPDATE api_keys SET last_used_at")
            with fleet.client(gateway, key, timeout=30) as client:
                answer = client.get("/account")
                assert proxy.tripped.is_set()
                assert answer.status_code == 503, answer.text
                assert answer.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
                assert int(answer.headers["Retry-After"]) >= 1
                proxy.restore()
                assert _eventually_ok(client)
            fleet.services.db.dispose()
            with fleet.services.db.read() as session:
                used = session.get(ApiKey, key_id_of(fleet, key))
                assert used is not None and used.last_used_at is not None


def _eventually_ok(client: httpx.Client) -> bool:
    """The pool's cut connections are dropped on first use; a later request goes through."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        answer = client.get("/account")
        if answer.status_code == 200:
            return True
        assert answer.status_code == 503, answer.text
        time.sleep(0.2)
    return False
