"""Uploads: presign, (PUT to storage), complete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from core.accounts.service import Caller
from gateway.auth import current_caller
from gateway.contract import ERROR_RESPONSES, NOT_YET_RESPONSES, ContractRoute
from gateway.not_yet import not_implemented
from gateway.uploads.schemas import PresignEnvelope, PresignRequest, UploadEnvelope

router = APIRouter(route_class=ContractRoute, responses={**ERROR_RESPONSES, **NOT_YET_RESPONSES})


@router.post("/uploads", response_model=PresignEnvelope, summary="Presign an upload")
def presign(body: PresignRequest, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Uploads")


@router.post(
    "/uploads/{uploadId}/complete", response_model=UploadEnvelope, summary="Complete an upload"
)
def complete(uploadId: str, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Uploads")
