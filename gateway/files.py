"""Local storage's signed URLs, served by the app itself outside `/v1` (no API key: the
signature is the authorisation): GET for results and uploads, PUT for the upload flow."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import FileResponse
from starlette.requests import ClientDisconnect

from core.errors import NotFound
from core.storage.local import FILES_ROUTE, LocalStorage
from gateway.dependencies import runtime_of
from gateway.errors import ApiError

router = APIRouter(include_in_schema=False)


def _local_storage(request: Request) -> LocalStorage:
    storage = runtime_of(request).services.storage
    if not isinstance(storage, LocalStorage):
        raise NotFound("File")
    return storage


@router.get(FILES_ROUTE + "/{key:path}")
def get_file(
    request: Request, key: str, expires: int = Query(0), signature: str = Query("")
) -> FileResponse:
    storage = _local_storage(request)
    if not storage.verify("GET", key, expires, signature):
        raise ApiError(403, "FORBIDDEN", "Signature invalid or expired")
    path = storage.path_of(key)
    if not path.is_file():
        raise NotFound("File")
    return FileResponse(path, headers={"Cache-Control": "private, max-age=3600"})


@router.put(FILES_ROUTE + "/{key:path}")
async def put_file(
    request: Request,
    key: str,
    expires: int = Query(0),
    contentType: str = Query(""),
    maxBytes: int = Query(0),
    signature: str = Query(""),
) -> Response:
    """An upload URL's PUT: streamed to a temp file with its own size limit (the 64 KiB JSON
    limit of `/v1` does not apply here), stored only when complete and within the limit."""
    storage = _local_storage(request)
    if not storage.verify("PUT", key, expires, signature, contentType, str(maxBytes)):
        raise ApiError(403, "FORBIDDEN", "Signature invalid or expired")
    if request.headers.get("content-type") != contentType:
        raise ApiError(
            403, "FORBIDDEN", f"Content-Type must be {contentType}, the type declared for it"
        )
    too_large = ApiError(413, "PAYLOAD_TOO_LARGE", f"The file is larger than {maxBytes} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > maxBytes:
        raise too_large  # answered before the body is read
    received = 0
    try:
        with storage.writer(key) as handle:
            async for chunk in request.stream():
                received += len(chunk)
                if received > maxBytes:
                    raise too_large
                await anyio.to_thread.run_sync(handle.write, chunk)
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is listening; nothing was stored
    return Response(status_code=200)
