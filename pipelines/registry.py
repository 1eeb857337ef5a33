"""Which pipeline serves which operation: the diffusion pipeline for every operation the model
registry names, the builtin one for the rest, and `SFUMATO_PIPELINES` overriding both."""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Literal, overload

from models.cache import shared_cache
from models.registry import find_registry, registered_operations
from models.settings import ModelSettings
from pipelines.base import (
    AnimatePipeline,
    EditPipeline,
    ExtractStylePipeline,
    GeneratePipeline,
    Pipeline,
    ReframePipeline,
    TransitionPipeline,
    UpscalePipeline,
)

BUILTIN = {
    "generate": "pipelines.builtin.generate:BuiltinGenerate",
    "edit": "pipelines.builtin.edit:BuiltinEdit",
    "reframe": "pipelines.builtin.reframe:BuiltinReframe",
    "upscale": "pipelines.builtin.upscale:BuiltinUpscale",
    "animate": "pipelines.builtin.animate:BuiltinAnimate",
    "transition": "pipelines.builtin.transition:BuiltinTransition",
    "extract_style": "pipelines.builtin.extract_style:BuiltinExtractStyle",
}
DIFFUSION = {
    "generate": "pipelines.diffusion.generate:DiffusionGenerate",
    "edit": "pipelines.diffusion.edit:DiffusionEdit",
    "reframe": "pipelines.diffusion.reframe:DiffusionReframe",
    "upscale": "pipelines.diffusion.upscale:DiffusionUpscale",
    "animate": "pipelines.diffusion.animate:DiffusionAnimate",
    "transition": "pipelines.diffusion.transition:DiffusionTransition",
}


# The id of the builtin pipelines as a model (GET /v1/models): served for every operation.
BUILTIN_MODEL = "builtin"


class ModelNotServed(LookupError):
    """A job names a model this worker does not have (its registry changed since the create)."""


class PipelineRegistry:
    """Instantiates each operation's pipeline once per process and keeps it (model caching).

    `models` (default: read from the environment) locates the model registry; pipelines whose
    constructor takes `models` (the diffusion ones) are given it. An operation's models are its
    default (the registry's entry, else builtin) and the builtin pipeline, which every worker
    has: a job naming `builtin` runs there whatever the default."""

    def __init__(
        self, overrides: dict[str, str] | None = None, models: ModelSettings | None = None
    ) -> None:
        self.models = models or ModelSettings()
        self._diffusion = registered_operations(self.models)
        diffusion = {op: DIFFUSION[op] for op in self._diffusion}
        self._targets = {**BUILTIN, **diffusion, **(overrides or {})}
        self._loaded: dict[str, Pipeline] = {}
        self._builtin: dict[str, Pipeline] = {}
        self._lock = threading.Lock()

    def operations(self) -> list[str]:
        return sorted(self._targets)

    def watch_model_cache(self, listener: Callable[[str, str], None]) -> None:
        """`listener(kind, folder)` told of each of the process's model cache lookups ("hit",
        "miss") and evictions ("evict"), once however often it is asked."""
        listeners = shared_cache(self.models).listeners
        if listener not in listeners:
            listeners.append(listener)

    def target(self, operation: str) -> str | None:
        """The `module:Class` serving `operation`."""
        return self._targets.get(operation)

    def default_model(self, operation: str) -> str:
        """The id of the model an operation's jobs run on when they name none."""
        if operation not in self._diffusion:
            return BUILTIN_MODEL
        return find_registry(self.models).spec(operation).id

    def for_model(self, operation: str, model: str | None) -> Pipeline:
        """The pipeline serving `operation` with `model` (None: the default). Raises
        ModelNotServed for a model this worker does not have."""
        if model is None or model == self.default_model(operation):
            return self.get(operation)
        if model != BUILTIN_MODEL or operation not in BUILTIN:
            raise ModelNotServed(f"this worker does not serve the model {model!r} for {operation}")
        with self._lock:
            if operation not in self._builtin:
                self._builtin[operation] = _instantiate(BUILTIN[operation], self.models)
            return self._builtin[operation]

    # Typed by the operation named: `get("generate")` is a GeneratePipeline.
    @overload
    def get(self, operation: Literal["generate"]) -> GeneratePipeline: ...
    @overload
    def get(self, operation: Literal["edit"]) -> EditPipeline: ...
    @overload
    def get(self, operation: Literal["reframe"]) -> ReframePipeline: ...
    @overload
    def get(self, operation: Literal["upscale"]) -> UpscalePipeline: ...
    @overload
    def get(self, operation: Literal["animate"]) -> AnimatePipeline: ...
    @overload
    def get(self, operation: Literal["transition"]) -> TransitionPipeline: ...
    @overload
    def get(self, operation: Literal["extract_style"]) -> ExtractStylePipeline: ...
    @overload
    def get(self, operation: str) -> Pipeline: ...

    def get(self, operation: str) -> Pipeline:
        """The operation's pipeline, made on first use. A class that does not serve the
        operation (a configuration naming the wrong one) is refused here, at the worker's
        start, rather than failing its jobs."""
        with self._lock:
            if operation not in self._loaded:
                target = self._targets.get(operation)
                if target is None:
                    raise LookupError(f"no pipeline serves the operation {operation!r}")
                pipeline = _instantiate(target, self.models)
                if not isinstance(pipeline, Pipeline) or pipeline.operation != operation:
                    served = getattr(pipeline, "operation", None)
                    raise TypeError(
                        f"{target} cannot serve {operation!r}: it is not a pipeline of that "
                        f"operation (its operation is {served!r})"
                    )
                self._loaded[operation] = pipeline
            return self._loaded[operation]


def _instantiate(target: str, models: ModelSettings) -> Pipeline:
    module_name, _, class_name = target.partition(":")
    pipeline_class = getattr(importlib.import_module(module_name), class_name)
    takes_models = "models" in inspect.signature(pipeline_class).parameters
    pipeline: Pipeline = pipeline_class(models=models) if takes_models else pipeline_class()
    return pipeline
