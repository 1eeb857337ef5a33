"""The account behind the API key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from core.accounts import service as accounts
from core.errors import NotFound
from gateway.account.schemas import AccountEnvelope
from gateway.auth import CallerDep
from gateway.dependencies import DatabaseDep
from gateway.schemas import ERROR_RESPONSES, ContractRoute

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.get("/account", response_model=AccountEnvelope, summary="The key's account")
def get_account(caller: CallerDep, db: DatabaseDep) -> Any:
    overview = accounts.overview(db, caller)
    if overview is None:
        raise NotFound("Plan")
    plan = overview.plan
    return {
        "data": {
            "userId": caller.account_id,
            "email": caller.email,
            "plan": {
                "id": plan.id,
                "tier": plan.tier,
                "limits": {
                    "video": plan.allows_video,
                    "maxInflightImages": plan.max_inflight_images,
                    "maxInflightVideos": plan.max_inflight_videos,
                    "dailyGenerationCap": plan.daily_generation_cap,
                },
            },
            "credits": overview.credits,
        }
    }
