"""The account an API key belongs to (SPEC.md "Account"), with extensions: the credit balance
and the plan's limits."""

from __future__ import annotations

from pydantic import Field

from gateway.schemas import ResponseModel


class PlanLimits(ResponseModel):
    video: bool = Field(description="Whether the plan may create videos")
    maxInflightImages: int = Field(description="Image jobs pending or processing at once")
    maxInflightVideos: int = Field(description="Video jobs pending or processing at once")
    dailyGenerationCap: int | None = Field(
        description="Jobs a day (UTC) that did not fail; null: no cap"
    )


class PlanRef(ResponseModel):
    id: str
    tier: str
    limits: PlanLimits = Field(description="Extension: the plan's limits")


class AccountView(ResponseModel):
    userId: str
    email: str
    plan: PlanRef
    credits: int = Field(description="Extension: the credit balance")


class AccountEnvelope(ResponseModel):
    data: AccountView
