"""Uploads: the page's drag-and-drop runs presign -> PUT -> complete from the browser (the
same three steps as the API, through `core/uploads/service.py`); without JavaScript the file
form posts here and the server takes the same steps. Delete, as the API's DELETE does."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Response
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from core.errors import DomainError
from core.uploads import service as uploads_service
from gateway.dashboard.jobs import gallery_for
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PostedDep,
    RateLimited,
    see_other,
    spend,
)
from gateway.dependencies import files_base_url
from gateway.errors import validation_details
from gateway.nul import nul_fields
from gateway.responses import JsonResponse
from gateway.uploads.schemas import PresignRequest

router = APIRouter(route_class=DashboardRoute)
PAGE_SIZE = 24


def _uploads_page(page: Page, status: int = 200, **context: Any) -> Response:
    cursor = page.request.query_params.get("cursor")
    media, next_cursor = uploads_service.list_page(
        page.services, page.user.account_id, cursor, PAGE_SIZE
    )
    media_ids = [row.id for row in media]
    thumbnail_urls = gallery_for(page).thumbnail_urls(media_ids)
    names = uploads_service.filenames(page.services, media_ids)
    return page.render(
        "uploads.html",
        status,
        nav="uploads",
        uploads=[(row, thumbnail_urls[row.id], names.get(row.id, "")) for row in media],
        next_cursor=next_cursor,
        max_bytes=page.services.settings.max_image_bytes,
        **context,
    )


DONE = {"uploaded": "Uploaded.", "deleted": "The upload was deleted."}


@router.get("/uploads")
def uploads_page(page: PageDep, done: Annotated[str, Query(max_length=16)] = "") -> Response:
    return _uploads_page(page, notice=DONE.get(done))


@router.post("/uploads/{upload_id}/delete")
def delete_upload(page: PostedDep, upload_id: str) -> Response:
    """The API's DELETE /v1/uploads/{id}, after the box that confirms it was ticked."""
    if page.field("confirm") != "yes":
        return _uploads_page(page, 400, message="Tick the box to confirm the deletion.")
    uploads_service.delete(page.services, page.user.account_id, upload_id)
    return see_other(f"{PREFIX}/uploads?done=deleted")


@router.post("/uploads")
async def upload_form(page: PostedDep) -> Response:
    """The form's fallback: the file comes to the gateway, which stores it where the upload
    URL would have, then completes the upload."""
    file = page.form.get("file") if page.form is not None else None
    if not isinstance(file, UploadFile) or not file.filename:
        return _uploads_page(page, 400, message="Choose a file to upload.")
    limit = page.services.settings.max_image_bytes
    data = await file.read(limit + 1)
    try:
        request = PresignRequest.model_validate(
            {"filename": file.filename, "contentType": file.content_type or ""}
        )
    except ValidationError:
        return _uploads_page(page, 400, message="Only PNG, JPEG, GIF and WebP images.")
    if len(data) > limit:
        return _uploads_page(page, 413, message=f"The file is larger than {limit} bytes.")

    def store() -> None:
        # The API's two calls this form makes in one: the presign, then the completion.
        spend(page, "POST", "/v1/uploads")
        spend(page, "POST", "/v1/uploads/-/complete")
        services = page.services
        presigned = uploads_service.presign(
            services,
            page.user.account_id,
            request.filename,
            request.content_type,
            files_base_url(page.request),
        )
        services.storage.put_bytes(
            uploads_service.staging_key(presigned.upload.id), data, request.content_type
        )
        uploads_service.complete(services, page.user.account_id, presigned.upload.id)

    try:
        await anyio.to_thread.run_sync(store)
    except DomainError as error:
        reason = "; ".join((error.details or {}).values()) or error.message
        return _uploads_page(page, error.status, message=f"Not uploaded: the file {reason}.")
    return see_other(f"{PREFIX}/uploads?done=uploaded")


def _json_error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status_code=status)


def _rate_limited(limited: RateLimited) -> JsonResponse:
    response = _json_error(str(limited), 429)
    response.headers["Retry-After"] = str(limited.seconds)
    return response


@router.post("/uploads/presign")
async def presign(page: PostedDep) -> Response:
    raw = await page.request.body()
    found = nul_fields(raw, b"")
    if found:
        return _json_error("; ".join(f"{field} {why}" for field, why in found.items()))
    try:
        body = PresignRequest.model_validate_json(raw)
    except ValidationError as error:
        details = validation_details(list(error.errors()))
        return _json_error("; ".join(f"{field} {why}" for field, why in details.items()))
    try:
        await anyio.to_thread.run_sync(spend, page, "POST", "/v1/uploads")
    except RateLimited as limited:
        return _rate_limited(limited)
    presigned = await anyio.to_thread.run_sync(
        uploads_service.presign,
        page.services,
        page.user.account_id,
        body.filename,
        body.content_type,
        files_base_url(page.request),
    )
    return JsonResponse({"uploadId": presigned.upload.id, "uploadUrl": presigned.url})


@router.post("/uploads/{upload_id}/complete")
def complete(page: PostedDep, upload_id: str) -> Response:
    try:
        spend(page, "POST", f"/v1/uploads/{upload_id}/complete")
    except RateLimited as limited:
        return _rate_limited(limited)
    try:
        media = uploads_service.complete(page.services, page.user.account_id, upload_id)
    except DomainError as error:
        reason = "; ".join((error.details or {}).values()) or error.message
        return _json_error(f"the file {reason}" if error.details else reason, error.status)
    return JsonResponse({"id": media.id, "width": media.width, "height": media.height})
