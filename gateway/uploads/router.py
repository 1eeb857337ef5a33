"""Uploads: presign, (PUT to storage), complete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from core.uploads import service as uploads
from gateway.auth import CallerDep
from gateway.dependencies import ServicesDep, SignerDep, files_base_url
from gateway.paths import UploadId
from gateway.schemas import (
    DELETE_ERROR_RESPONSES,
    ERROR_RESPONSES,
    ContractRoute,
    ErrorEnvelope,
)
from gateway.uploads.schemas import PresignEnvelope, PresignRequest, UploadEnvelope

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.post("/uploads", response_model=PresignEnvelope, summary="Presign an upload")
def create_upload(
    request: Request, body: PresignRequest, caller: CallerDep, services: ServicesDep
) -> Any:
    presigned = uploads.presign(
        services, caller.account_id, body.filename, body.content_type, files_base_url(request)
    )
    return {
        "data": {
            "uploadId": presigned.upload.id,
            "uploadUrl": presigned.url,
            "expiresIn": presigned.expires_in,
        }
    }


@router.post(
    "/uploads/{uploadId}/complete",
    response_model=UploadEnvelope,
    responses={413: {"model": ErrorEnvelope, "description": "Over the size limit"}},
    summary="Complete an upload",
)
def complete_upload(
    upload_id: UploadId, caller: CallerDep, services: ServicesDep, signer: SignerDep
) -> Any:
    media = uploads.complete(services, caller.account_id, upload_id)
    return {
        "data": {
            "id": media.id,
            "url": signer.url(media.storage_key),
            "contentType": media.content_type,
            "width": media.width,
            "height": media.height,
        }
    }


@router.delete(
    "/uploads/{uploadId}",
    status_code=204,
    response_class=Response,
    responses=DELETE_ERROR_RESPONSES,
    operation_id="deleteUpload",
    tags=["uploads"],
    summary="Delete an upload and its stored bytes (extension)",
)
def delete_upload(upload_id: UploadId, caller: CallerDep, services: ServicesDep) -> Response:
    uploads.delete(services, caller.account_id, upload_id)
    return Response(status_code=204)
