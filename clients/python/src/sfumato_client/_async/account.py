"""The account an API key belongs to."""

from __future__ import annotations

from sfumato_client._async.transport import AsyncTransport
from sfumato_client.models import Account as AccountModel


class AsyncAccount:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def get(self) -> AccountModel:
        body = await self._transport.request("GET", "/account")
        return AccountModel.model_validate(body["data"])
