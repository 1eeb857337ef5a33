"""The account an API key belongs to (SPEC.md "Account")."""

from __future__ import annotations

from gateway.contract import ResponseModel


class PlanRef(ResponseModel):
    id: str
    tier: str


class AccountView(ResponseModel):
    userId: str
    email: str
    plan: PlanRef


class AccountEnvelope(ResponseModel):
    data: AccountView
