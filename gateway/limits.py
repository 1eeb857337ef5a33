"""Per-key rate limits in fixed windows aligned to an injectable clock, counted in this process
(embedded mode) or in Redis, so that every gateway replica shares one count. Rates are parsed
and counters named as the `limits` library does, so gateways of an earlier release, which
counted through it, count in the same keys."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis
from limits import RateLimitItem, parse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.batches import LoopBatches
from core.service_config import RateLimits
from core.settings import Settings
from gateway.errors import ApiError, error_response

log = logging.getLogger(__name__)
# (method, path pattern) -> bucket; anything else under /v1 is the default bucket.
BUCKETS = (
    ("POST", re.compile(r"^/v1/images/(generate|edit|resize|upscale)$"), "image"),
    ("POST", re.compile(r"^/v1/videos/(image-to-video|frames)$"), "video"),
    ("POST", re.compile(r"^/v1/styles/extract$"), "style"),
    ("POST", re.compile(r"^/v1/uploads$"), "upload"),
)


def bucket_of(method: str, path: str) -> str:
    for bucket_method, pattern, bucket in BUCKETS:
        if method == bucket_method and pattern.match(path):
            return bucket
    return "default"


# The window's numbers on every answer: limit, remaining, reset (seconds).
WINDOW_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
# As an ASGI message carries them (names lowercase, bytes), made once.
RAW_WINDOW_HEADERS = tuple(name.lower().encode() for name in WINDOW_HEADERS)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int

    def _values(self) -> tuple[int, int, int]:
        return self.limit, self.remaining, self.reset_seconds

    def headers(self) -> dict[str, str]:
        return {
            name: str(value) for name, value in zip(WINDOW_HEADERS, self._values(), strict=True)
        }

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """`headers()` as an ASGI message carries them."""
        return [
            (name, str(value).encode())
            for name, value in zip(RAW_WINDOW_HEADERS, self._values(), strict=True)
        ]


class Counts(Protocol):
    def incr(self, key: str, expiry: int) -> int:
        """One more request counted in `key`, which expires `expiry` seconds after its first
        count; the count so far. Blocks on a network store."""
        ...

    async def incr_in_loop(self, key: str, expiry: int) -> int:
        """`incr` from the event loop, which it never blocks."""
        ...

    def peek(self, key: str) -> tuple[int, int]:
        """`key`'s count and the seconds until it expires, counting nothing ((0, 0): none).
        Blocks on a network store."""
        ...


class ProcessCounts:
    """Counts kept in this process (embedded mode: one gateway). In place of `limits`'
    MemoryStorage, whose increment starts a timer thread to expire keys on nearly every call (a
    quarter of a job read's CPU in profiles); here expired windows are dropped at most once a
    second, on an increment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, list[float]] = {}
        self._next_purge = 0.0

    def incr(self, key: str, expiry: int) -> int:
        now = time.monotonic()
        with self._lock:
            if now >= self._next_purge:
                self._counts = {
                    name: entry for name, entry in self._counts.items() if entry[1] > now
                }
                self._next_purge = now + 1.0
            entry = self._counts.get(key)
            if entry is None or entry[1] <= now:
                entry = self._counts[key] = [0, now + expiry]
            entry[0] += 1
            return int(entry[0])

    async def incr_in_loop(self, key: str, expiry: int) -> int:
        return self.incr(key, expiry)

    def peek(self, key: str) -> tuple[int, int]:
        now = time.monotonic()
        with self._lock:
            entry = self._counts.get(key)
            if entry is None or entry[1] <= now:
                return 0, 0
            return int(entry[0]), max(1, math.ceil(entry[1] - now))


# The counters' keys in Redis, as `limits`' Redis storage prefixes them.
REDIS_KEY_PREFIX = "LIMITS:"
# Counts each key once, starting its expiry with its first count (`limits`' incr_expire.lua,
# for many keys): one round trip, atomic, for all the requests of a batch.
INCREMENT_SCRIPT = """
local counts = {}
for index, key in ipairs(KEYS) do
    local count = redis.call("incr", key)
    if count == 1 then
        redis.call("expire", key, ARGV[index])
    end
    counts[index] = count
end
return counts
"""
# Batches of counts in flight per event loop (each holds one of the client's connections).
REDIS_BATCH_SLOTS = 4
# A count Redis has not answered by then is not counted (the request goes on, as when Redis is
# down), instead of holding every request on a server gone silent.
REDIS_COUNT_TIMEOUT_SECONDS = 5


class RedisCounts:
    """Counts in Redis. From the event loop, the counts asked for in one pass of the loop are one
    script's run (`core/batches.py`): a request's count through redis-py's asyncio client cost
    more than the rest of a job read (docs/benchmarks.md)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client = redis.Redis.from_url(url)
        self._increment = self._client.register_script(INCREMENT_SCRIPT)
        # An asyncio client's connections belong to the loop that opened them: one per loop.
        self._loop_increments: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._batches: LoopBatches[tuple[str, int], int] = LoopBatches(
            self._incr_batch, REDIS_BATCH_SLOTS, within=REDIS_COUNT_TIMEOUT_SECONDS
        )

    def incr(self, key: str, expiry: int) -> int:
        return int(self._increment(keys=[REDIS_KEY_PREFIX + key], args=[expiry])[0])

    def peek(self, key: str) -> tuple[int, int]:
        pipeline = self._client.pipeline(transaction=False)
        pipeline.get(REDIS_KEY_PREFIX + key)
        pipeline.ttl(REDIS_KEY_PREFIX + key)
        count, seconds = pipeline.execute()
        return (int(count), max(1, int(seconds))) if count is not None else (0, 0)

    async def incr_in_loop(self, key: str, expiry: int) -> int:
        try:
            return await self._batches((key, expiry))
        except TimeoutError:
            raise redis.TimeoutError(
                f"Redis did not answer within {REDIS_COUNT_TIMEOUT_SECONDS} s"
            ) from None

    async def _incr_batch(self, counts: list[tuple[str, int]]) -> list[int]:
        loop = asyncio.get_running_loop()
        increment = self._loop_increments.get(loop)
        if increment is None:
            client = aioredis.Redis.from_url(self.url)
            increment = self._loop_increments[loop] = client.register_script(INCREMENT_SCRIPT)
        answers = await increment(
            keys=[REDIS_KEY_PREFIX + key for key, _ in counts],
            args=[expiry for _, expiry in counts],
        )
        return [int(count) for count in answers]


class RateLimiter:
    def __init__(
        self,
        rates: RateLimits,
        storage_uri: str,
        namespace: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._buckets = {
            bucket: BucketRate.of(parse(getattr(rates, bucket)), namespace, bucket)
            for bucket in ("image", "video", "style", "upload", "default")
        }
        self.storage: Counts = (
            ProcessCounts() if storage_uri.startswith("memory://") else RedisCounts(storage_uri)
        )
        self.clock = clock
        self.signin = SignInThrottle(self.storage, rates, namespace)

    @classmethod
    def from_settings(cls, settings: Settings, rates: RateLimits) -> RateLimiter:
        storage = settings.broker_url if settings.uses_redis else "memory://"
        return cls(rates, storage, settings.namespace)

    def hit(self, bucket: str, api_key_id: str) -> Decision:
        """Count one request; the window is the clock's current one, so it rolls over when
        the clock says, not when the store's first hit happened to be. Blocks on Redis."""
        window = self._window(bucket, api_key_id)
        # One atomic increment (one round trip on Redis) gives both verdict and remainder.
        return window.decision(self.storage.incr(window.key, window.seconds))

    async def hit_in_loop(self, bucket: str, api_key_id: str) -> Decision:
        """`hit` from the event loop, which it never blocks."""
        window = self._window(bucket, api_key_id)
        return window.decision(await self.storage.incr_in_loop(window.key, window.seconds))

    def _window(self, bucket: str, api_key_id: str) -> _Window:
        limits = self._buckets[bucket]
        seconds = limits.seconds
        now = self.clock()
        index = int(now // seconds)
        key = limits.key(api_key_id, index)
        reset = max(1, math.ceil((index + 1) * seconds - now))
        return _Window(limits.limit, key, seconds, reset)


@dataclass(frozen=True)
class BucketRate:
    """A bucket's rate, with the parts of its counters' keys made once: the key is
    `RateLimitItem.key_for(namespace, bucket, api_key_id, window)`'s, built for every request
    with string conversions it did not need (a tenth of an embedded job read's CPU)."""

    limit: int
    seconds: int
    prefix: str
    suffix: str

    @classmethod
    def of(cls, item: RateLimitItem, namespace: str, bucket: str) -> BucketRate:
        suffix = item.key_for()[len(item.namespace) + 1 :]
        return cls(
            item.amount, item.get_expiry(), f"{item.namespace}/{namespace}/{bucket}/", suffix
        )

    def key(self, api_key_id: str, window: int) -> str:
        return f"{self.prefix}{api_key_id}/{window}/{self.suffix}"


@dataclass(frozen=True)
class _Window:
    """One bucket's current window for one key: where it is counted and when it ends."""

    limit: int
    key: str
    seconds: int
    reset_seconds: int

    def decision(self, count: int) -> Decision:
        return Decision(
            count <= self.limit, self.limit, max(0, self.limit - count), self.reset_seconds
        )


class RateLimitMiddleware:
    """After authentication (a 401 spends nothing): count the request in its bucket, refuse
    it with 429 when the window is spent, and put the window's numbers on every answer."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller: Any = scope.get("state", {}).get("caller")
        if scope["type"] != "http" or caller is None:
            await self.app(scope, receive, send)
            return
        bucket = bucket_of(scope["method"], scope["path"])
        try:
            decision = await self.limiter.hit_in_loop(bucket, caller.api_key_id)
        except redis.RedisError as error:
            # Open while the shared counter is out of reach (a Redis restart): refusing every
            # request would turn a broker blip into an outage; jobs are safe in the database.
            log.warning("rate limit not counted, Redis unavailable: %s", error)
            await self.app(scope, receive, send)
            return
        if not decision.allowed:
            refusal = ApiError(
                429,
                "RATE_LIMIT_ERROR",
                "Rate limit exceeded",
                headers={**decision.headers(), "Retry-After": str(decision.reset_seconds)},
            )
            await error_response(refusal)(scope, receive, send)
            return

        window_headers = decision.raw_headers()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *window_headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SignInThrottle:
    """Password guesses (the dashboard's sign-in, and the current password on its account page),
    limited without letting a stranger lock the owner out:
    - strict, per (email, client address): `signin` attempts (10 a minute), so one address
      hammering one account stops there, and other people behind that address are untouched;
    - per client address: `signin_address` wrong passwords, whatever the accounts (credential
      stuffing from one address);
    - per account, looser: `signin_account` wrong passwords from all addresses together. Past it
      the account backs off: addresses that failed on it in the last day are refused for the
      back-off (the limit's window, doubled at each new trip within a day, a day at most),
      while an address with no recent failure on it is still checked, so the owner's right
      password gets through (a wrong one marks that address too).
    Counters are named by a hash of (email, address): no email or address is written to the
    store in clear."""

    RECENT_SECONDS = 24 * 3600
    LONGEST_BACKOFF_SECONDS = 24 * 3600

    def __init__(self, storage: Counts, rates: RateLimits, namespace: str) -> None:
        self.storage = storage
        self.pair = parse(rates.signin)
        self.address = parse(rates.signin_address)
        self.account = parse(rates.signin_account)
        self.namespace = namespace

    def _key(self, kind: str, *parts: str) -> str:
        digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
        return f"signin/{self.namespace}/{kind}/{digest}"

    def admit(self, email: str, address: str) -> int:
        """Count an attempt; 0 when its password may be checked, else the seconds to wait."""
        pair = self._key("pair", email, address)
        if self.storage.incr(pair, self.pair.get_expiry()) > self.pair.amount:
            return self.storage.peek(pair)[1]
        failures, reset = self.storage.peek(self._key("address", address))
        if failures >= self.address.amount:
            return reset
        locked, reset = self.storage.peek(self._key("backoff", email))
        if locked and self.storage.peek(self._key("failed", email, address))[0]:
            return reset
        return 0

    def failed(self, email: str, address: str) -> None:
        """A wrong password for `email` from `address`."""
        self.storage.incr(self._key("failed", email, address), self.RECENT_SECONDS)
        self.storage.incr(self._key("address", address), self.address.get_expiry())
        window = self.account.get_expiry()
        if self.storage.incr(self._key("account", email), window) == self.account.amount:
            trips = self.storage.incr(self._key("trips", email), self.RECENT_SECONDS)
            backoff = min(window * 2 ** min(trips - 1, 16), self.LONGEST_BACKOFF_SECONDS)
            self.storage.incr(self._key("backoff", email), backoff)
            log.warning(
                "sign-in: an account reached %d wrong passwords in %d s; backing off %d s "
                "(last from %s)",
                self.account.amount,
                window,
                backoff,
                address,
            )
