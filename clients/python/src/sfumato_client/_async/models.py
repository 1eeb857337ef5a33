"""The models the deployment serves, by operation (extension)."""

from __future__ import annotations

import builtins

from sfumato_client._async.transport import AsyncTransport
from sfumato_client.models import ServedModel


class AsyncModels:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def list(self, operation: str | None = None) -> builtins.list[ServedModel]:
        """What each operation can run (`model` on a create), with the steps, guidance and
        LoRA adapters each takes; `operation` keeps only that operation's."""
        params = {} if operation is None else {"operation": operation}
        body = await self._transport.request("GET", "/models", params=params)
        return [ServedModel.model_validate(model) for model in body["data"]]
