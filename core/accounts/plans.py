"""The plans the service sells; written to the `plans` table at start-up."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlanConfig:
    id: str
    tier: str
    allows_video: bool
    max_inflight_images: int
    max_inflight_videos: int
    daily_generation_cap: int | None


DEFAULT_PLANS = (
    PlanConfig("free", "free", False, 2, 0, 50),
    PlanConfig("pro", "paid", True, 8, 2, 2000),
    PlanConfig("enterprise", "enterprise", True, 32, 8, None),
)
PLAN_IDS = tuple(plan.id for plan in DEFAULT_PLANS)
