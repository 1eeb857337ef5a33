"""Uploads (SPEC.md "Uploads")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from core.jobs.requests import RequestModel
from gateway.schemas import ResponseModel

ImageContentType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]


class PresignRequest(RequestModel):
    filename: Annotated[str, StringConstraints(min_length=1, max_length=255)]
    content_type: ImageContentType


class Presigned(ResponseModel):
    uploadId: str
    uploadUrl: str
    expiresIn: int


class PresignEnvelope(ResponseModel):
    data: Presigned


class CompletedUpload(ResponseModel):
    id: str
    url: str
    contentType: str
    width: int
    height: int


class UploadEnvelope(ResponseModel):
    data: CompletedUpload
