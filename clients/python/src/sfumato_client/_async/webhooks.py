"""Webhooks (an extension of the hosted API): the account's endpoints and secrets, and a job's
deliveries. Each secret is in the answer that made it only."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from sfumato_client._async.transport import AsyncTransport
from sfumato_client.models import CreateWebhookRequest, WebhookDelivery, WebhookEndpoint


class AsyncWebhooks:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def create(self, url: str, events: Sequence[str] | None = None) -> WebhookEndpoint:
        """An endpoint for every job event of the account its `events` name (the server's
        default: completed and failed); its `secret` is shown here only."""
        body = CreateWebhookRequest(url=url, events=list(events) if events else None)
        answer = await self._transport.request("POST", "/webhooks", json=body.wire())
        return WebhookEndpoint.model_validate(answer["data"])

    async def list(self) -> builtins.list[WebhookEndpoint]:
        answer = await self._transport.request("GET", "/webhooks")
        return [WebhookEndpoint.model_validate(item) for item in answer["data"]]

    async def delete(self, endpoint_id: str) -> None:
        await self._transport.request("DELETE", f"/webhooks/{endpoint_id}")

    async def rotate_secret(self, endpoint_id: str) -> WebhookEndpoint:
        """A new secret for the endpoint (in the answer only), enabling it if it was disabled."""
        answer = await self._transport.request("POST", f"/webhooks/{endpoint_id}/rotate-secret")
        return WebhookEndpoint.model_validate(answer["data"])

    async def rotate_account_secret(self) -> str:
        """A new secret for the webhooks named on creates (the `webhook` argument)."""
        answer = await self._transport.request("POST", "/webhooks/secret")
        secret: str = answer["data"]["secret"]
        return secret

    async def deliveries(self, job_id: str) -> builtins.list[WebhookDelivery]:
        answer = await self._transport.request("GET", f"/jobs/{job_id}/deliveries")
        return [WebhookDelivery.model_validate(item) for item in answer["data"]]

    async def resend(self, job_id: str, delivery_id: str) -> WebhookDelivery:
        answer = await self._transport.request(
            "POST", f"/jobs/{job_id}/deliveries/{delivery_id}/resend"
        )
        return WebhookDelivery.model_validate(answer["data"])
