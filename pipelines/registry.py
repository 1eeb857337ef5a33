"""Which pipeline serves which operation: builtin defaults, overridable by configuration."""

from __future__ import annotations

import importlib
import threading
from typing import Any

BUILTIN = {
    "generate": "pipelines.builtin.generate:BuiltinGenerate",
    "edit": "pipelines.builtin.edit:BuiltinEdit",
    "reframe": "pipelines.builtin.reframe:BuiltinReframe",
    "upscale": "pipelines.builtin.upscale:BuiltinUpscale",
    "animate": "pipelines.builtin.animate:BuiltinAnimate",
    "transition": "pipelines.builtin.transition:BuiltinTransition",
}


class PipelineRegistry:
    """Instantiates each operation's pipeline once per process and keeps it (model caching)."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self._targets = {**BUILTIN, **(overrides or {})}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def operations(self) -> list[str]:
        return sorted(self._targets)

    def get(self, operation: str) -> Any:
        with self._lock:
            if operation not in self._loaded:
                target = self._targets.get(operation)
                if target is None:
                    raise LookupError(f"no pipeline serves the operation {operation!r}")
                module_name, _, class_name = target.partition(":")
                pipeline_class = getattr(importlib.import_module(module_name), class_name)
                self._loaded[operation] = pipeline_class()
            return self._loaded[operation]
