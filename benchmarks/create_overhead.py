"""`create_overhead`: what authentication, the rate limit and idempotency add to a create."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from benchmarks.harness import CONFIG_FILE, Options
from benchmarks.measures import percentile
from benchmarks.report import Section, Table, ms, verdict
from benchmarks.testkit.pipelines import STEERABLE_PIPELINES
from core.accounts import api_keys, authentication
from core.accounts import service as accounts
from core.accounts.service import Caller
from core.services import Services
from core.settings import Settings
from gateway.app import create_app
from gateway.bodies import BodyLimits, RequestBodyMiddleware
from gateway.errors import install_error_handlers
from gateway.images.router import router as images_router
from gateway.runtime import Gateway
from sfumato.processes import build_gateway

GOAL_ADDED_P50_SECONDS = 0.0005
WARMUP_ROUNDS = 20
PATH = "/v1/images/generate"
BODY = {"prompt": "[sleep 0] create overhead", "quality": "medium"}
METHOD = f"""
`POST {PATH}` latency, one request at a time, through two apps built in one process over the same
embedded `Services` (SQLite, in-memory broker and rate-limit store; no workers, so nothing else
runs and the jobs stay queued): the real `create_app(gateway)`, each request with a valid API key,
and a stripped app with the same images router, error handlers and body-size limit but no
authentication or rate-limit middleware, a fixed caller put into the request state instead, and
no `Idempotency-Key`. Each round sends three creates: through the real app with a unique
`Idempotency-Key`, through it without one, and through the stripped app, each variant first,
second and third in turn, so all three see the same machine conditions. The first minus the
third is what the three layers add (the key lookup, the rate-limit hit and its headers, the
idempotency claim: body hash, record written in the create's transaction); the middle one splits
that into authentication plus rate limit and idempotency. The client is httpx over its
in-process ASGI transport, the same for every variant, so its cost cancels out of the
differences. {WARMUP_ROUNDS} warm-up rounds first are not counted. Limits from
`benchmarks/generous.toml` never refuse. Goal: under {GOAL_ADDED_P50_SECONDS * 1000:g} ms added
at p50.
"""


class FixedCaller:
    """Puts one caller into every request's state, where the auth middleware would."""

    def __init__(self, app: ASGIApp, caller: Caller) -> None:
        self.app = app
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope.setdefault("state", {})["caller"] = self.caller
        await self.app(scope, receive, send)


def stripped_app(gateway: Gateway, caller: Caller) -> FastAPI:
    """The create path of `create_app` without authentication, rate limit or idempotency."""
    app = FastAPI()
    app.state.gateway = gateway
    app.include_router(images_router, prefix="/v1")
    install_error_handlers(app)
    app.add_middleware(
        RequestBodyMiddleware, limits=BodyLimits.from_settings(gateway.services.settings)
    )
    app.add_middleware(FixedCaller, caller=caller)
    return app


@contextmanager
def embedded_gateway(data_dir: Path) -> Iterator[Gateway]:
    settings = Settings(data_dir=data_dir, pipelines=STEERABLE_PIPELINES, config_file=CONFIG_FILE)
    services = Services.from_settings(settings)
    services.prepare()
    try:
        yield build_gateway(services, run_workers=False)
    finally:
        services.db.dispose()


def run(options: Options) -> Section:
    rounds = options.scaled(500, 100)
    with embedded_gateway(options.work_dir / "create_overhead") as gateway:
        db = gateway.services.db
        accounts.create_account(db, "bench-create@bench.local", "enterprise", 1_000_000)
        key = api_keys.create_key(db, "bench-create@bench.local", "benchmark", None).plaintext
        caller = authentication.authenticate(db, key)
        assert caller is not None
        full, no_idempotency, stripped = asyncio.run(
            _interleaved(create_app(gateway), stripped_app(gateway, caller), key, rounds)
        )
    section = Section("create_overhead", METHOD)
    table = Table(["app", "requests", "p50", "p99", "mean"])
    for name, latencies in (
        ("real, with an `Idempotency-Key`", full),
        ("real, no `Idempotency-Key`", no_idempotency),
        ("stripped", stripped),
    ):
        table.add(
            name,
            len(latencies),
            ms(_p50(latencies)),
            ms(percentile(sorted(latencies), 0.99)),
            ms(sum(latencies) / len(latencies)),
        )
    added_p50 = _p50(full) - _p50(stripped)
    added_p99 = percentile(sorted(full), 0.99) - percentile(sorted(stripped), 0.99)
    table.add("real with a key minus stripped", "", ms(added_p50), ms(added_p99), "")
    section.tables.append(table)
    section.findings += [
        f"Added by the three layers at p50: {ms(added_p50)}, goal under "
        f"{GOAL_ADDED_P50_SECONDS * 1000:g} ms {verdict(added_p50 < GOAL_ADDED_P50_SECONDS)}. "
        f"The median of the per-round differences: {ms(_paired_p50(full, stripped))}.",
        f"Of which authentication and the rate limit: {ms(_p50(no_idempotency) - _p50(stripped))}"
        f" (per-round median {ms(_paired_p50(no_idempotency, stripped))}); the idempotency "
        f"claim: {ms(_p50(full) - _p50(no_idempotency))} (per-round median "
        f"{ms(_paired_p50(full, no_idempotency))}).",
        "p99 rests on each variant's few slowest requests, so its difference moves from run to "
        "run far more than p50's.",
    ]
    return section


def _p50(latencies: list[float]) -> float:
    return percentile(sorted(latencies), 0.50)


def _paired_p50(slower: list[float], faster: list[float]) -> float:
    """The median of the differences between requests of the same round."""
    return _p50([a - b for a, b in zip(slower, faster, strict=True)])


async def _interleaved(
    real_app: FastAPI, stripped_app: FastAPI, key: str, rounds: int
) -> tuple[list[float], list[float], list[float]]:
    """Latencies of the measured creates, round by round: through the real app with and without
    an `Idempotency-Key`, and through the stripped app."""
    base = "http://bench"
    real_client = httpx.AsyncClient(transport=httpx.ASGITransport(app=real_app), base_url=base)
    stripped_client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=stripped_app), base_url=base
    )
    latencies: tuple[list[float], list[float], list[float]] = ([], [], [])
    async with real_client, stripped_client:

        async def with_key() -> float:
            headers = {"x-api-key": key, "Idempotency-Key": uuid.uuid4().hex}
            return await _timed_create(real_client, headers)

        async def without_key() -> float:
            return await _timed_create(real_client, {"x-api-key": key})

        async def stripped() -> float:
            return await _timed_create(stripped_client, {})

        variants = (with_key, without_key, stripped)
        for index in range(WARMUP_ROUNDS + rounds):
            # Each variant goes first, second and third in turn.
            order = [(index + shift) % len(variants) for shift in range(len(variants))]
            seconds = {variant: await variants[variant]() for variant in order}
            if index >= WARMUP_ROUNDS:
                for variant, measured in seconds.items():
                    latencies[variant].append(measured)
    return latencies


async def _timed_create(client: httpx.AsyncClient, headers: dict[str, Any]) -> float:
    started = time.perf_counter()
    response = await client.post(PATH, json=BODY, headers=headers)
    seconds = time.perf_counter() - started
    if response.status_code != 202:
        raise RuntimeError(f"create answered {response.status_code}: {response.text[:300]}")
    return seconds
