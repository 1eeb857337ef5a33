"""Uploads: presign, (PUT to storage), complete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from core.accounts.service import Caller
from core.ids import parse_uuid
from core.uploads import service as uploads
from gateway.auth import current_caller
from gateway.contract import ERROR_RESPONSES, ContractRoute, ErrorEnvelope
from gateway.errors import ApiError, not_found, validation_error
from gateway.jobs.router import presenter_for
from gateway.runtime import Gateway, get_gateway
from gateway.uploads.schemas import PresignEnvelope, PresignRequest, UploadEnvelope

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.post("/uploads", response_model=PresignEnvelope, summary="Presign an upload")
def presign(
    request: Request,
    body: PresignRequest,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    presigned = uploads.presign(
        gateway.services, caller.account_id, body.filename, body.contentType, str(request.base_url)
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
def complete(
    request: Request,
    uploadId: str,
    caller: Caller = Depends(current_caller),
    gateway: Gateway = Depends(get_gateway),
) -> Any:
    upload_id = parse_uuid(uploadId)
    if upload_id is None:
        raise not_found("Upload")
    try:
        media = uploads.complete(gateway.services, caller.account_id, upload_id)
    except uploads.UploadNotFound:
        raise not_found("Upload") from None
    except uploads.UploadInvalid as error:
        raise validation_error({"file": str(error)}, "The uploaded file was not accepted") from None
    except uploads.UploadTooLarge as error:
        raise ApiError(
            413, "PAYLOAD_TOO_LARGE", "The uploaded file is too large", {"file": str(error)}
        ) from None
    return {
        "data": {
            "id": media.id,
            "url": presenter_for(request, gateway).url(media.storage_key),
            "contentType": media.content_type,
            "width": media.width,
            "height": media.height,
        }
    }
