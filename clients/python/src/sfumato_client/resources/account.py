"""The account an API key belongs to."""

from __future__ import annotations

from sfumato_client._transport import AsyncTransport, SyncTransport
from sfumato_client.models import Account as AccountModel


class Account:
    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def get(self) -> AccountModel:
        return AccountModel.model_validate(self._transport.request("GET", "/account")["data"])


class AsyncAccount:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def get(self) -> AccountModel:
        body = await self._transport.request("GET", "/account")
        return AccountModel.model_validate(body["data"])
