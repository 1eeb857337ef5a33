"""Brand styles: extraction, reads and semantic search over linked assets."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Query, Request, Response

from core.accounts.service import Caller
from core.ids import parse_uuid
from core.jobs import service as jobs_service
from core.pagination import BadCursor
from core.prices import price_of
from core.styles import service as styles_service
from gateway.auth import current_caller
from gateway.contract import (
    CREATE_ERROR_RESPONSES,
    ERROR_RESPONSES,
    NOT_YET_RESPONSES,
    ContractRoute,
    JobEnvelope,
)
from gateway.errors import not_found, validation_error
from gateway.jobs.creation import IdempotencyKey, accepted, claim_for, create_job
from gateway.not_yet import not_implemented
from gateway.runtime import Gateway, get_gateway
from gateway.styles.presenter import StylePresenter
from gateway.styles.schemas import (
    ExtractRequest,
    SearchRequest,
    SearchResults,
    StyleEnvelope,
    StylePage,
)

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


def presenter_for(request: Request, gateway: Gateway) -> StylePresenter:
    settings = gateway.services.settings
    return StylePresenter(
        gateway.services.storage, str(request.base_url), settings.signed_url_seconds
    )


@router.post(
    "/styles/extract",
    status_code=202,
    response_model=JobEnvelope,
    responses=CREATE_ERROR_RESPONSES,
    summary="Extract a brand style from a website",
)
def extract(
    request: Request,
    response: Response,
    body: ExtractRequest,
    idempotency_key: IdempotencyKey = None,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    parts = urlsplit(body.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise validation_error({"url": "must be an http or https URL"})
    inputs = {"url": body.url}
    job, replayed = create_job(
        gateway,
        caller,
        jobs_service.NewJob(
            type="style.extract",
            operation="extract_style",
            queue="style",
            inputs=inputs,
            price=price_of(gateway.services.config.prices, "extract_style", inputs),
        ),
        claim_for(idempotency_key, request, body),
    )
    return accepted(request, response, gateway, job, replayed)


@router.get("/styles", response_model=StylePage, summary="List saved styles, newest first")
def list_styles(
    request: Request,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    try:
        styles, next_cursor = styles_service.list_page(
            gateway.services.db, caller.account_id, cursor, limit
        )
    except BadCursor:
        raise validation_error({"cursor": "is not a cursor this service issued"}) from None
    presenter = presenter_for(request, gateway)
    return {"data": [presenter.summary(style) for style in styles], "nextCursor": next_cursor}


@router.get("/styles/{id}", response_model=StyleEnvelope, summary="Get a saved style")
def get_style(
    request: Request,
    id: str,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    style_id = parse_uuid(id)
    style = (
        styles_service.get_owned(gateway.services.db, caller.account_id, style_id)
        if style_id
        else None
    )
    if style is None:
        raise not_found("Style")
    return {"data": presenter_for(request, gateway).detail(style)}


@router.post(
    "/styles/{id}/search",
    response_model=SearchResults,
    responses=NOT_YET_RESPONSES,
    summary="Semantic search over a style's linked assets",
)
def search(id: str, body: SearchRequest, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Style search")
