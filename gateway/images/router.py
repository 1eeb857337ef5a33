"""Image creates: generate, edit, resize (reframe), upscale."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from core.accounts.service import Caller
from gateway.auth import current_caller
from gateway.contract import CREATE_ERROR_RESPONSES, ContractRoute, JobEnvelope
from gateway.images import service
from gateway.images.schemas import EditRequest, GenerateRequest, ResizeRequest, UpscaleRequest
from gateway.jobs.creation import IdempotencyKey, accepted, claim_for
from gateway.runtime import Gateway, get_gateway

router = APIRouter(route_class=ContractRoute, responses=CREATE_ERROR_RESPONSES)


@router.post(
    "/images/generate", status_code=202, response_model=JobEnvelope, summary="Generate images"
)
def generate(
    request: Request,
    response: Response,
    body: GenerateRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    claim = claim_for(idempotency_key, request, body)
    job, replayed = service.generate(gateway, caller, body, claim)
    return accepted(request, response, gateway, job, replayed)


@router.post(
    "/images/edit", status_code=202, response_model=JobEnvelope, summary="Edit a prior image"
)
def edit(
    request: Request,
    response: Response,
    body: EditRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    claim = claim_for(idempotency_key, request, body)
    job, replayed = service.edit(gateway, caller, body, claim)
    return accepted(request, response, gateway, job, replayed)


@router.post(
    "/images/resize",
    status_code=202,
    response_model=JobEnvelope,
    summary="Reframe a prior image to another aspect ratio",
)
def resize(
    request: Request,
    response: Response,
    body: ResizeRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    claim = claim_for(idempotency_key, request, body)
    job, replayed = service.resize(gateway, caller, body, claim)
    return accepted(request, response, gateway, job, replayed)


@router.post(
    "/images/upscale", status_code=202, response_model=JobEnvelope, summary="Upscale a prior image"
)
def upscale(
    request: Request,
    response: Response,
    body: UpscaleRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    claim = claim_for(idempotency_key, request, body)
    job, replayed = service.upscale(gateway, caller, body, claim)
    return accepted(request, response, gateway, job, replayed)
