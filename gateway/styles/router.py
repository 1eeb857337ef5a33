"""Brand styles: extraction, reads and semantic search over linked assets."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from core.accounts.service import Caller
from gateway.auth import current_caller
from gateway.contract import (
    CREATE_ERROR_RESPONSES,
    ERROR_RESPONSES,
    NOT_YET_RESPONSES,
    ContractRoute,
    JobEnvelope,
)
from gateway.not_yet import not_implemented
from gateway.styles.schemas import (
    ExtractRequest,
    SearchRequest,
    SearchResults,
    StyleEnvelope,
    StylePage,
)

router = APIRouter(route_class=ContractRoute, responses={**ERROR_RESPONSES, **NOT_YET_RESPONSES})


@router.post(
    "/styles/extract",
    status_code=202,
    response_model=JobEnvelope,
    responses=CREATE_ERROR_RESPONSES,
    summary="Extract a brand style from a website",
)
def extract(body: ExtractRequest, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Style extraction")


@router.get("/styles", response_model=StylePage, summary="List saved styles")
def list_styles(
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
    caller: Caller = Depends(current_caller),
) -> Any:
    raise not_implemented("Styles")


@router.get("/styles/{id}", response_model=StyleEnvelope, summary="Get a saved style")
def get_style(id: str, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Styles")


@router.post(
    "/styles/{id}/search",
    response_model=SearchResults,
    summary="Semantic search over a style's linked assets",
)
def search(id: str, body: SearchRequest, caller: Caller = Depends(current_caller)) -> Any:
    raise not_implemented("Style search")
