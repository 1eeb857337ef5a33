"""Serves the local storage backend's signed URLs (outside `/v1`: no API key, a signature)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse

from core.storage.local import FILES_ROUTE, LocalStorage
from gateway.errors import ApiError, not_found

router = APIRouter(include_in_schema=False)


@router.get(FILES_ROUTE + "/{key:path}")
def get_file(
    request: Request, key: str, expires: int = Query(0), signature: str = Query("")
) -> FileResponse:
    storage = request.app.state.gateway.services.storage
    if not isinstance(storage, LocalStorage):
        raise not_found("File")
    if not storage.verify("GET", key, expires, signature):
        raise ApiError(403, "FORBIDDEN", "Signature invalid or expired")
    path = storage.path_of(key)
    if not path.is_file():
        raise not_found("File")
    return FileResponse(path, headers={"Cache-Control": "private, max-age=3600"})
