"""Which pipeline serves which operation: the diffusion pipeline for every operation the model
registry names, the builtin one for the rest, and `SFUMATO_PIPELINES` overriding both."""

from __future__ import annotations

import importlib
import inspect
import threading
from typing import Any

from models.registry import registered_operations
from models.settings import ModelSettings

BUILTIN = {
    "generate": "pipelines.builtin.generate:BuiltinGenerate",
    "edit": "pipelines.builtin.edit:BuiltinEdit",
    "reframe": "pipelines.builtin.reframe:BuiltinReframe",
    "upscale": "pipelines.builtin.upscale:BuiltinUpscale",
    "animate": "pipelines.builtin.animate:BuiltinAnimate",
    "transition": "pipelines.builtin.transition:BuiltinTransition",
}
DIFFUSION = {
    "generate": "pipelines.diffusion.generate:DiffusionGenerate",
    "edit": "pipelines.diffusion.edit:DiffusionEdit",
    "reframe": "pipelines.diffusion.reframe:DiffusionReframe",
    "upscale": "pipelines.diffusion.upscale:DiffusionUpscale",
    "animate": "pipelines.diffusion.animate:DiffusionAnimate",
    "transition": "pipelines.diffusion.transition:DiffusionTransition",
}


class PipelineRegistry:
    """Instantiates each operation's pipeline once per process and keeps it (model caching).

    `models` (default: read from the environment) locates the model registry; pipelines whose
    constructor takes `models` (the diffusion ones) are given it."""

    def __init__(
        self, overrides: dict[str, str] | None = None, models: ModelSettings | None = None
    ) -> None:
        self.models = models or ModelSettings()
        diffusion = {op: DIFFUSION[op] for op in registered_operations(self.models)}
        self._targets = {**BUILTIN, **diffusion, **(overrides or {})}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def operations(self) -> list[str]:
        return sorted(self._targets)

    def target(self, operation: str) -> str | None:
        """The `module:Class` serving `operation`."""
        return self._targets.get(operation)

    def get(self, operation: str) -> Any:
        with self._lock:
            if operation not in self._loaded:
                target = self._targets.get(operation)
                if target is None:
                    raise LookupError(f"no pipeline serves the operation {operation!r}")
                module_name, _, class_name = target.partition(":")
                pipeline_class = getattr(importlib.import_module(module_name), class_name)
                takes_models = "models" in inspect.signature(pipeline_class).parameters
                self._loaded[operation] = (
                    pipeline_class(models=self.models) if takes_models else pipeline_class()
                )
            return self._loaded[operation]
