"""Brand styles: extraction, reads, the linked folder of assets and semantic search over it.

Search embeds its query while the request waits, so the sentence model runs in the gateway
process: `pipelines.styles`' pure embedding functions are handed to the styles service here,
the one place the gateway reaches into pipelines (docs/architecture.md). The model loads on
first use, once per process; handlers are plain `def`s, so FastAPI runs them (and the model)
in its thread pool, off the event loop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from core.accounts.service import Caller
from core.ids import parse_uuid
from core.jobs.creation import ExtractStyleJobRequest
from core.pagination import BadCursor
from core.references.service import UnresolvedReferences
from core.styles import service as styles_service
from core.styles.service import AssetSemantics, FolderCache, StyleNotFound
from gateway.auth import current_caller
from gateway.contract import CREATE_ERROR_RESPONSES, ERROR_RESPONSES, ContractRoute, JobEnvelope
from gateway.errors import not_found, validation_error
from gateway.jobs.creation import IdempotencyKey, accepted, claim_for, create_job
from gateway.runtime import Gateway, get_gateway
from gateway.styles.presenter import StylePresenter
from gateway.styles.schemas import (
    ExtractRequest,
    LinkAssetsRequest,
    SearchRequest,
    SearchResults,
    StyleAssetPage,
    StyleAssets,
    StyleEnvelope,
    StylePage,
)
from pipelines.styles import describe_image, embed_texts, rank_by_similarity

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)
SEMANTICS = AssetSemantics(describe=describe_image, embed=embed_texts, rank=rank_by_similarity)
FOLDERS = FolderCache()


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
    job_request = ExtractStyleJobRequest(url=body.url)
    created = create_job(gateway, caller, job_request, claim_for(idempotency_key, request, body))
    return accepted(request, response, gateway, created)


@router.get("/styles", response_model=StylePage, summary="List saved styles, newest first")
def list_styles(
    request: Request,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    with _as_api_errors():
        styles, next_cursor = styles_service.list_page(
            gateway.services.db, caller.account_id, cursor, limit
        )
    presenter = presenter_for(request, gateway)
    return {"data": [presenter.summary(style) for style in styles], "nextCursor": next_cursor}


def _style_id(id: str) -> str:
    """The canonical style id, or 404: a malformed id names no style."""
    style_id = parse_uuid(id)
    if style_id is None:
        raise not_found("Style")
    return style_id


@contextmanager
def _as_api_errors() -> Iterator[None]:
    """The styles service's refusals as the envelope's answers."""
    try:
        yield
    except StyleNotFound:
        raise not_found("Style") from None
    except BadCursor:
        raise validation_error({"cursor": "is not a cursor this service issued"}) from None
    except UnresolvedReferences as error:
        raise validation_error(error.details, "An image could not be resolved") from None


@router.get("/styles/{id}", response_model=StyleEnvelope, summary="Get a saved style")
def get_style(
    request: Request,
    id: str,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    style = styles_service.get_owned(gateway.services.db, caller.account_id, _style_id(id))
    if style is None:
        raise not_found("Style")
    return {"data": presenter_for(request, gateway).detail(style)}


@router.post(
    "/styles/{id}/assets",
    response_model=StyleAssets,
    summary="Link images into a style's folder (extension)",
)
def link_assets(
    request: Request,
    id: str,
    body: LinkAssetsRequest,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    with _as_api_errors():
        assets = styles_service.link_assets(
            gateway.services, SEMANTICS, caller.account_id, _style_id(id), body.images
        )
    presenter = presenter_for(request, gateway)
    return {"data": [presenter.asset(asset) for asset in assets]}


@router.get(
    "/styles/{id}/assets",
    response_model=StyleAssetPage,
    summary="List a style's linked assets, newest first (extension)",
)
def list_assets(
    request: Request,
    id: str,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    with _as_api_errors():
        assets, next_cursor = styles_service.list_assets(
            gateway.services.db, caller.account_id, _style_id(id), cursor, limit
        )
    presenter = presenter_for(request, gateway)
    return {"data": [presenter.asset(asset) for asset in assets], "nextCursor": next_cursor}


@router.post(
    "/styles/{id}/search",
    response_model=SearchResults,
    summary="Semantic search over a style's linked assets",
)
def search(
    request: Request,
    id: str,
    body: SearchRequest,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    with _as_api_errors():
        hits = styles_service.search(
            gateway.services.db,
            SEMANTICS,
            FOLDERS,
            caller.account_id,
            _style_id(id),
            body.query,
            body.limit,
        )
    presenter = presenter_for(request, gateway)
    return {"data": [presenter.hit(hit) for hit in hits]}
