# Generated from sfumato_client/_async/models.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""The models the deployment serves, by operation (extension)."""

from __future__ import annotations

import builtins

from sfumato_client._sync.transport import Transport
from sfumato_client.models import ServedModel


class Models:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def list(self, operation: str | None = None) -> builtins.list[ServedModel]:
        """What each operation can run (`model` on a create), with the steps, guidance and
        LoRA adapters each takes; `operation` keeps only that operation's."""
        params = {} if operation is None else {"operation": operation}
        body = self._transport.request("GET", "/models", params=params)
        return [ServedModel.model_validate(model) for model in body["data"]]
