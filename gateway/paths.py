"""Typed ids in paths: the canonical UUID of what the path names, or 404 for an id that is not
one (a malformed id names nothing), decided here for every route."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from core.errors import NotFound
from core.ids import parse_uuid


def _canonical(raw: str, what: str) -> str:
    canonical = parse_uuid(raw)
    if canonical is None:
        raise NotFound(what)
    return canonical


async def _job_id(id: str) -> str:
    return _canonical(id, "Job")


async def _style_id(id: str) -> str:
    return _canonical(id, "Style")


async def _upload_id(uploadId: str) -> str:
    return _canonical(uploadId, "Upload")


async def _webhook_id(id: str) -> str:
    return _canonical(id, "Webhook endpoint")


async def _delivery_id(deliveryId: str) -> str:
    return _canonical(deliveryId, "Delivery")


JobId = Annotated[str, Depends(_job_id)]
WebhookId = Annotated[str, Depends(_webhook_id)]
DeliveryId = Annotated[str, Depends(_delivery_id)]
StyleId = Annotated[str, Depends(_style_id)]
UploadId = Annotated[str, Depends(_upload_id)]
