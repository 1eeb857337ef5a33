"""The account behind the API key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from core.accounts import service as accounts
from core.accounts.service import Caller
from gateway.account.schemas import AccountEnvelope
from gateway.auth import current_caller
from gateway.contract import ERROR_RESPONSES, ContractRoute
from gateway.errors import not_found
from gateway.runtime import Gateway, get_gateway

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.get("/account", response_model=AccountEnvelope, summary="The key's account")
def get_account(
    caller: Caller = Depends(current_caller), gateway: Gateway = Depends(get_gateway)
) -> Any:
    plan = accounts.plan_of(gateway.services.db, caller.plan_id)
    if plan is None:
        raise not_found("Plan")
    return {
        "data": {
            "userId": caller.account_id,
            "email": caller.email,
            "plan": {"id": plan.id, "tier": plan.tier},
        }
    }
