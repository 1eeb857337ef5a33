# Generated from sfumato_client/_async/account.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""The account an API key belongs to."""

from __future__ import annotations

from sfumato_client._sync.transport import Transport
from sfumato_client.models import Account as AccountModel


class Account:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def get(self) -> AccountModel:
        body = self._transport.request("GET", "/account")
        return AccountModel.model_validate(body["data"])
