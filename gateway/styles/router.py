"""Brand styles: extraction, reads, the linked folder of assets and semantic search over it.

Search embeds its query while the request waits, so the sentence model runs in the gateway
process: its functions come with the runtime (`Gateway.semantics`, made by the composition root;
the model loads at start-up in a background thread, and `/readyz` is not ready until it is
loaded). Handlers are plain `def`s, so FastAPI runs them (and the model: NumPy, which lets go of
the interpreter lock in its matrix products) in its thread pool, off the event loop."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from core.jobs.requests import ExtractRequest
from core.styles import assets as style_assets
from core.styles import search as style_search
from core.styles import service as styles_service
from core.styles.service import StyleNotFound
from gateway.auth import CallerDep
from gateway.dependencies import (
    DatabaseDep,
    FoldersDep,
    LinkSlotsDep,
    SemanticsDep,
    ServicesDep,
    SignerDep,
)
from gateway.jobs.submission import SubmitDep
from gateway.paths import StyleId
from gateway.schemas import (
    CREATE_ERROR_RESPONSES,
    DELETE_ERROR_RESPONSES,
    ERROR_RESPONSES,
    ContractRoute,
    JobEnvelope,
)
from gateway.styles.presenter import StylePresenter
from gateway.styles.schemas import (
    LinkAssetsRequest,
    SearchRequest,
    SearchResults,
    StyleAssetPage,
    StyleAssets,
    StyleEnvelope,
    StylePage,
)

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.post(
    "/styles/extract",
    status_code=202,
    response_model=JobEnvelope,
    responses=CREATE_ERROR_RESPONSES,
    summary="Extract a brand style from a website",
)
def extract_style(body: ExtractRequest, submit: SubmitDep) -> Any:
    return submit(body)


@router.get("/styles", response_model=StylePage, summary="List saved styles, newest first")
def list_styles(
    caller: CallerDep,
    db: DatabaseDep,
    signer: SignerDep,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
) -> Any:
    styles, next_cursor = styles_service.list_page(db, caller.account_id, cursor, limit)
    presenter = StylePresenter(signer)
    return {"data": [presenter.summary(style) for style in styles], "nextCursor": next_cursor}


@router.get("/styles/{id}", response_model=StyleEnvelope, summary="Get a saved style")
def get_style(style_id: StyleId, caller: CallerDep, db: DatabaseDep, signer: SignerDep) -> Any:
    style = styles_service.get_owned(db, caller.account_id, style_id)
    if style is None:
        raise StyleNotFound()
    return {"data": StylePresenter(signer).detail(style)}


@router.delete(
    "/styles/{id}",
    status_code=204,
    response_class=Response,
    responses=DELETE_ERROR_RESPONSES,
    operation_id="deleteStyle",
    tags=["styles"],
    summary="Delete a saved style, its folder and its brand images (extension)",
)
def delete_style(style_id: StyleId, caller: CallerDep, services: ServicesDep) -> Response:
    styles_service.delete(services, caller.account_id, style_id)
    return Response(status_code=204)


@router.post(
    "/styles/{id}/assets",
    response_model=StyleAssets,
    summary="Link images into a style's folder (extension)",
)
def add_style_assets(
    style_id: StyleId,
    body: LinkAssetsRequest,
    caller: CallerDep,
    services: ServicesDep,
    semantics: SemanticsDep,
    link_slots: LinkSlotsDep,
    signer: SignerDep,
) -> Any:
    assets = style_assets.link_assets(
        services, semantics, link_slots, caller.account_id, style_id, body.images
    )
    presenter = StylePresenter(signer)
    return {"data": [presenter.asset(asset) for asset in assets]}


@router.get(
    "/styles/{id}/assets",
    response_model=StyleAssetPage,
    summary="List a style's linked assets, newest first (extension)",
)
def list_style_assets(
    style_id: StyleId,
    caller: CallerDep,
    db: DatabaseDep,
    signer: SignerDep,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
) -> Any:
    assets, next_cursor = style_assets.list_assets(db, caller.account_id, style_id, cursor, limit)
    presenter = StylePresenter(signer)
    return {"data": [presenter.asset(asset) for asset in assets], "nextCursor": next_cursor}


@router.post(
    "/styles/{id}/search",
    response_model=SearchResults,
    summary="Semantic search over a style's linked assets",
)
def search_style(
    style_id: StyleId,
    body: SearchRequest,
    caller: CallerDep,
    db: DatabaseDep,
    semantics: SemanticsDep,
    folders: FoldersDep,
    signer: SignerDep,
) -> Any:
    hits = style_search.search(
        db, semantics, folders, caller.account_id, style_id, body.query, body.limit
    )
    presenter = StylePresenter(signer)
    return {"data": [presenter.hit(hit) for hit in hits]}
