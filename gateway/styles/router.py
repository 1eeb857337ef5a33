"""Brand styles: extraction, reads, the linked folder of assets and semantic search over it.

Search embeds its query while the request waits, so the sentence model runs in the gateway
process: `pipelines.styles`' pure embedding functions are handed to the styles service here,
the one place the gateway reaches into pipelines (docs/architecture.md). The model loads once
per process, at start-up in a background thread (`SENTENCE_MODEL`, started by the lifespan;
`/readyz` is not ready until it is loaded); handlers are plain `def`s, so FastAPI runs them (and
the model: NumPy, which lets go of the interpreter lock in its matrix products) in its thread
pool, off the event loop."""

from __future__ import annotations

import logging
import threading
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from core.jobs.creation import ExtractStyleJobRequest
from core.styles import service as styles_service
from core.styles.service import AssetSemantics, FolderCache, LinkSlots, StyleNotFound
from gateway.auth import CallerDep
from gateway.contract import (
    CREATE_ERROR_RESPONSES,
    DELETE_ERROR_RESPONSES,
    ERROR_RESPONSES,
    ContractRoute,
    JobEnvelope,
)
from gateway.dependencies import DatabaseDep, ServicesDep, SignerDep
from gateway.jobs.creation import CreateJobDep
from gateway.paths import StyleId
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
from pipelines.styles import (
    describe_image,
    embed_texts,
    embeddings_loaded,
    load_embeddings,
    rank_by_similarity,
)

log = logging.getLogger(__name__)
router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


class SentenceModelLoad:
    """The sentence model loaded at start-up in a background thread, so no search pays for it
    and the event loop never waits on it; `check` is a readiness check (raises until loaded)."""

    def __init__(self) -> None:
        self._started = threading.Event()
        self._failure: str | None = None

    def start(self) -> None:
        if self._started.is_set() or embeddings_loaded():
            return
        self._started.set()
        threading.Thread(target=self._load, name="sentence-model", daemon=True).start()

    def _load(self) -> None:
        try:
            load_embeddings()
        except Exception as error:  # a search loads it again on first use
            log.exception("loading the sentence model failed")
            self._failure = f"{type(error).__name__}: {error}"

    def check(self) -> None:
        if embeddings_loaded():
            return
        raise RuntimeError(self._failure or "loading")


SENTENCE_MODEL = SentenceModelLoad()
SEMANTICS = AssetSemantics(describe=describe_image, embed=embed_texts, rank=rank_by_similarity)
FOLDERS = FolderCache()
LINK_SLOTS = LinkSlots()


@router.post(
    "/styles/extract",
    status_code=202,
    response_model=JobEnvelope,
    responses=CREATE_ERROR_RESPONSES,
    summary="Extract a brand style from a website",
)
def extract_style(body: ExtractRequest, create: CreateJobDep) -> Any:
    return create(body, ExtractStyleJobRequest(url=body.url))


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
    signer: SignerDep,
) -> Any:
    assets = styles_service.link_assets(
        services, SEMANTICS, LINK_SLOTS, caller.account_id, style_id, body.images
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
    assets, next_cursor = styles_service.list_assets(db, caller.account_id, style_id, cursor, limit)
    presenter = StylePresenter(signer)
    return {"data": [presenter.asset(asset) for asset in assets], "nextCursor": next_cursor}


@router.post(
    "/styles/{id}/search",
    response_model=SearchResults,
    summary="Semantic search over a style's linked assets",
)
def search_style(
    style_id: StyleId, body: SearchRequest, caller: CallerDep, db: DatabaseDep, signer: SignerDep
) -> Any:
    hits = styles_service.search(
        db, SEMANTICS, FOLDERS, caller.account_id, style_id, body.query, body.limit
    )
    presenter = StylePresenter(signer)
    return {"data": [presenter.hit(hit) for hit in hits]}
