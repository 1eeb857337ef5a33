"""Local storage's signed URLs, served by the app itself outside `/v1` (no API key: the
signature is the authorisation): GET (and HEAD, and byte ranges for seeking in videos) for
results and uploads, PUT for the upload flow.

A stored file is never trusted to be harmless to a browser: every answer says `nosniff`, a
sandboxing Content-Security-Policy, and `attachment` for anything but the media types the
service itself produces, so no file can run script on the origin that serves it
(docs/operations.md recommends a separate, cookieless origin for files: SFUMATO_FILES_URL).
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import PurePosixPath

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import FileResponse
from starlette.requests import ClientDisconnect

from core.errors import NotFound
from core.images import ACCEPTED_FORMATS
from core.storage import StorageError
from core.storage.local import FILES_ROUTE, LocalStorage
from core.uploads import service as uploads
from gateway.dependencies import runtime_of
from gateway.errors import ApiError

router = APIRouter(include_in_schema=False)

# Shown inline in a browser; anything else is offered as a download.
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "video/mp4"})
# The extensions the service names its own files with; anything else is typed by `mimetypes`.
_OWN_TYPES = {extension: content_type for content_type, extension in ACCEPTED_FORMATS.values()}
_OWN_TYPES[".mp4"] = "video/mp4"
FILES_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; sandbox"
_UNSAFE_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]")


def file_headers(key: str) -> tuple[str, dict[str, str]]:
    """The media type of the file at `key` (by its extension, which the service chose) and the
    headers that keep a browser from treating it as anything else."""
    path = PurePosixPath(key)
    media_type = (
        _OWN_TYPES.get(path.suffix.lower())
        or mimetypes.guess_type(key)[0]
        or "application/octet-stream"
    )
    name = _UNSAFE_NAME_CHARACTERS.sub("_", path.name).lstrip(".") or "file"
    disposition = "inline" if media_type in INLINE_TYPES else "attachment"
    return media_type, {
        "Cache-Control": "private, max-age=3600",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": FILES_CSP,
        "Content-Disposition": f'{disposition}; filename="{name}"',
    }


def _local_storage(request: Request) -> LocalStorage:
    storage = runtime_of(request).services.storage
    if not isinstance(storage, LocalStorage):
        raise NotFound("File")
    return storage


@router.api_route(FILES_ROUTE + "/{key:path}", methods=["GET", "HEAD"])
def get_file(
    request: Request, key: str, expires: int = Query(0), signature: str = Query("")
) -> FileResponse:
    storage = _local_storage(request)
    if not storage.verify("GET", key, expires, signature):
        raise ApiError(403, "FORBIDDEN", "Signature invalid or expired")
    try:
        path = storage.path_of(key)
    except StorageError:
        raise NotFound("File") from None  # a key outside the store names no file in it
    if not path.is_file():
        raise NotFound("File")
    media_type, headers = file_headers(key)
    # FileResponse answers HEAD without a body, and Range with 206 (or 416) itself.
    return FileResponse(path, media_type=media_type, headers=headers)


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
    limit of `/v1` does not apply here), stored only when complete and within the limit; refused
    (409) once its upload is completed."""
    storage = _local_storage(request)
    if not storage.verify("PUT", key, expires, signature, contentType, str(maxBytes)):
        raise ApiError(403, "FORBIDDEN", "Signature invalid or expired")
    await anyio.to_thread.run_sync(uploads.ensure_open, runtime_of(request).services, key)
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
