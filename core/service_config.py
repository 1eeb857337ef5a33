"""The service's configuration file: prices, plans, rate limits and the worker pools.

Defaults ship in `core/defaults.toml`; `SFUMATO_CONFIG_FILE` names a TOML file whose values
replace them key by key. Validated once at start-up, so a typo fails loudly there.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from limits import parse as parse_rate
from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULTS = Path(__file__).with_name("defaults.toml")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GeneratePrices(_Strict):
    quality: dict[str, int]
    resolution: dict[str, int]


class ResolutionPrices(_Strict):
    resolution: dict[str, int]


class VideoPrices(_Strict):
    per_second: dict[str, float]


class FlatPrice(_Strict):
    flat: int = Field(ge=0)


class Prices(_Strict):
    generate: GeneratePrices
    edit: ResolutionPrices
    reframe: ResolutionPrices
    upscale: ResolutionPrices
    animate: VideoPrices
    transition: VideoPrices
    extract_style: FlatPrice


class PlanConfig(_Strict):
    tier: str
    video: bool
    max_inflight_images: int = Field(ge=0)
    max_inflight_videos: int = Field(ge=0)
    daily_generation_cap: int = Field(ge=0)


class RateLimits(_Strict):
    image: str
    video: str
    style: str
    upload: str
    default: str
    # Password guesses in the dashboard (gateway/limits.py SignInThrottle): attempts per
    # (email, client address), wrong passwords per client address, and wrong passwords per
    # account from all addresses (past it, the account backs off for addresses that failed).
    signin: str = "10/minute"
    signin_address: str = "100/hour"
    signin_account: str = "50/hour"

    @field_validator("*")
    @classmethod
    def _parses(cls, value: str) -> str:
        parse_rate(value)
        return value


class QueueConfig(_Strict):
    """One worker pool (`sfumato worker --queue Q`): each queue is sized and scaled on its own."""

    # Jobs one worker process runs at once (threads); `--concurrency` overrides it.
    concurrency: int = Field(ge=1)
    # Messages a worker reserves beyond the ones it runs (Celery's prefetch multiplier).
    prefetch: int = Field(ge=1)
    # How long a worker may hold a first job open for others to batch with it (0: no batching).
    batch_window_ms: int = Field(ge=0)
    # The broker redelivers a message unacknowledged this long; above the longest job.
    visibility_timeout_seconds: int = Field(ge=60)
    # After SIGTERM a running job has this long to finish; then it is handed back (pending
    # again, republished, no attempt spent). Below Kubernetes' terminationGracePeriodSeconds.
    shutdown_grace_seconds: float = Field(ge=0)


class Queues(_Strict):
    image: QueueConfig
    video: QueueConfig
    style: QueueConfig

    def of(self, queue: str) -> QueueConfig:
        config: QueueConfig = getattr(self, queue)
        return config


class ServiceConfig(_Strict):
    prices: Prices
    plans: dict[str, PlanConfig]
    rate_limits: RateLimits
    queues: Queues


def merge_tables(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_tables(merged[key], value)
        else:
            merged[key] = value
    return merged


@cache
def load_config(path: Path | None = None) -> ServiceConfig:
    data = tomllib.loads(DEFAULTS.read_text())
    if path is not None:
        data = merge_tables(data, tomllib.loads(path.read_text()))
    return ServiceConfig.model_validate(data)
