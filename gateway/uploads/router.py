"""Uploads: presign, (PUT to storage), complete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from core.uploads import service as uploads
from gateway.auth import CallerDep
from gateway.contract import ERROR_RESPONSES, ContractRoute, ErrorEnvelope
from gateway.dependencies import ServicesDep, SignerDep
from gateway.paths import UploadId
from gateway.uploads.schemas import PresignEnvelope, PresignRequest, UploadEnvelope

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.post("/uploads", response_model=PresignEnvelope, summary="Presign an upload")
def create_upload(
    request: Request, body: PresignRequest, caller: CallerDep, services: ServicesDep
) -> Any:
    presigned = uploads.presign(
        services, caller.account_id, body.filename, body.contentType, str(request.base_url)
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
