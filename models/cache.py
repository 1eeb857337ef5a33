"""The process's loaded diffusion pipelines: loaded once, shared, evicted least-recently-used.

How a pipeline module gets its diffusers pipeline (the interface for pipelines/diffusion/*):

    from models.cache import shared_cache
    from models.registry import find_registry

    spec = find_registry(settings).spec("animate")            # the operation's registry entry
    with shared_cache(settings).pipeline_for(spec) as pipe:   # spec.pipeline's class, loaded once
        frames = pipe(image=..., generator=..., callback_on_step_end=...).frames
    with shared_cache(settings).pipeline_for(spec, task="inpainting") as pipe:   # from_pipe
        ...

`task` is None (the class the entry names), "text-to-image", "image-to-image" or "inpainting"
(the AutoPipelineFor* class of that task, made from the loaded weights with `from_pipe`, so no
second copy of the weights), or any diffusers pipeline class name (also made with `from_pipe`).
Inside the `with` block the weights are pinned (never evicted) and locked to this thread: the
components (and the stateful scheduler) are shared, so one call runs at a time per set of
weights, as one GPU would anyway. `shared_cache(settings).ensure(spec)` loads at worker
start-up; `models.loading.check(spec, device)` lists what is wrong with an entry without
loading it.

Loading (seconds to minutes) happens outside the cache's own lock, under a lock of the weights
being loaded: a reload of one model never holds up another operation's hit, and two threads
asking for the same weights load them once.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from models.device import free_device_memory, memory_budget_gb, resolve_device
from models.loading import derive_pipeline, load_ip_adapter, load_pipeline
from models.once import Once
from models.registry import ModelSpec
from models.settings import ModelSettings

log = logging.getLogger(__name__)

AUTO_TASKS = {
    "text-to-image": "AutoPipelineForText2Image",
    "image-to-image": "AutoPipelineForImage2Image",
    "inpainting": "AutoPipelineForInpainting",
}

# ("hit" | "miss" | "evict", the weights' folder): the place where metrics are wired.
CacheListener = Callable[[str, str], None]
WeightsKey = tuple[str, str, str]


@dataclass
class _Weights:
    """One loaded set of weights and the pipelines made from it."""

    key: WeightsKey
    memory_gb: float
    pipelines: dict[str, Any] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 0
    ip_adapter: bool = False


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: list[str] = field(default_factory=list)  # folders, in eviction order


class ModelCache:
    """Loaded pipelines of one process, least-recently-used first out under a memory budget.

    The budget (`SFUMATO_MODEL_MEMORY_GB`, else 90 % of the CUDA device, else unbounded on the
    CPU) is compared with the registry's `memory_gb` estimates, not measured: estimates are
    what an operator can plan GPU pools with, and measuring would mean loading first.
    """

    def __init__(
        self,
        device: str = "auto",
        budget_gb: float | None = None,
        loader: Callable[[ModelSpec, str], Any] | None = None,
    ) -> None:
        self._requested_device = device
        self._configured_budget_gb = budget_gb
        self._load = loader or load_pipeline
        self._weights: OrderedDict[WeightsKey, _Weights] = OrderedDict()
        # Guards the table above (and the fields of its entries); never held while loading.
        self._lock = threading.Lock()
        # One per set of weights: held while those weights are loaded or a pipeline is made
        # from them, so one thread loads and the others asking for them wait for it.
        self._loading: dict[WeightsKey, threading.Lock] = {}
        # Memory of the weights being loaded now (not in the table yet), for the budget.
        self._reserved: dict[WeightsKey, float] = {}
        self.stats = CacheStats()
        self.listeners: list[CacheListener] = []

    @classmethod
    def from_settings(cls, settings: ModelSettings) -> ModelCache:
        return cls(settings.model_device, settings.model_memory_gb or None)

    @cached_property
    def device(self) -> str:
        """Resolved on first use: finding CUDA imports torch (hundreds of MiB), which a process
        that only counts the cache's lookups (an embedded gateway serving the builtin CPU
        pipelines) never needs."""
        return resolve_device(self._requested_device)

    @cached_property
    def budget_gb(self) -> float:
        if self._configured_budget_gb is not None:
            return self._configured_budget_gb
        return memory_budget_gb(self.device)

    def loaded(self) -> list[WeightsKey]:
        """Weights held now, least recently used first."""
        with self._lock:
            return list(self._weights)

    @contextmanager
    def pipeline_for(self, spec: ModelSpec, task: str | None = None) -> Iterator[Any]:
        weights, pipeline = self._acquire(spec, task)
        try:
            with weights.lock:
                yield pipeline
        finally:
            with self._lock:
                weights.users -= 1

    def ensure(self, spec: ModelSpec, tasks: tuple[str | None, ...] = (None,)) -> None:
        """Load now (worker start-up) what the operation will ask for."""
        for task in tasks:
            with self.pipeline_for(spec, task):
                pass

    def _ready(self, spec: ModelSpec, class_name: str) -> _Weights | None:
        """The weights, pinned for the caller, if they hold all it asks for. Lock held."""
        weights = self._weights.get(spec.weights_key)
        if weights is None or class_name not in weights.pipelines:
            return None
        if spec.option("ip_adapter") and not weights.ip_adapter:
            return None
        self._weights.move_to_end(spec.weights_key)
        weights.users += 1
        return weights

    def _acquire(self, spec: ModelSpec, task: str | None) -> tuple[_Weights, Any]:
        class_name = AUTO_TASKS.get(task or "", task or spec.pipeline)
        key = spec.weights_key
        with self._lock:
            weights = self._ready(spec, class_name)
            if weights is not None:
                self._notify("hit", str(spec.folder))
                return weights, weights.pipelines[class_name]
            self._notify("miss", str(spec.folder))
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                weights = self._ready(spec, class_name)  # another thread made it meanwhile
                if weights is not None:
                    return weights, weights.pipelines[class_name]
                weights = self._weights.get(key)
                if weights is None:
                    self._make_room(spec.memory_gb)
                    self._reserved[key] = spec.memory_gb
                else:
                    weights.users += 1  # pinned while a pipeline is made from them
            if weights is None:
                try:
                    base = self._load(spec, self.device)
                finally:
                    with self._lock:
                        del self._reserved[key]
                weights = _Weights(key, spec.memory_gb, {spec.pipeline: base}, users=1)
                with self._lock:
                    self._weights[key] = weights
            try:
                self._complete(weights, spec, class_name)
            except BaseException:
                with self._lock:
                    weights.users -= 1
                raise
            with self._lock:
                weights.memory_gb = max(weights.memory_gb, spec.memory_gb)
                self._weights.move_to_end(key)
            return weights, weights.pipelines[class_name]

    @staticmethod
    def _complete(weights: _Weights, spec: ModelSpec, class_name: str) -> None:
        """Add the IP-Adapter and the pipeline class the caller asks for to loaded weights."""
        base = next(iter(weights.pipelines.values()))
        if spec.option("ip_adapter") and not weights.ip_adapter:
            load_ip_adapter(spec, base, list(weights.pipelines.values()))
            weights.ip_adapter = True
        if class_name not in weights.pipelines:
            weights.pipelines[class_name] = derive_pipeline(class_name, base)

    def release_unused(self, keep: ModelSpec) -> None:
        """After the device ran out of memory running `keep`: drop every other set of weights
        no call is using (the next use reloads them) and hand the freed memory back."""
        with self._lock:
            unused = [key for key, weights in self._weights.items() if not weights.users]
            for key in [key for key in unused if key != keep.weights_key]:
                del self._weights[key]
                self.stats.evictions.append(key[0])
                self._notify("evict", key[0])
                log.info("released the unused model %s after running out of memory", key[0])
        free_device_memory()

    def _make_room(self, needed_gb: float) -> None:
        """Evict unpinned weights, oldest use first, until `needed_gb` fits the budget (with
        what other threads are loading now). Lock held."""
        used = sum(w.memory_gb for w in self._weights.values()) + sum(self._reserved.values())
        evicted = False
        for key in list(self._weights):
            if used + needed_gb <= self.budget_gb:
                break
            weights = self._weights[key]
            if weights.users:
                continue
            del self._weights[key]
            used -= weights.memory_gb
            evicted = True
            self.stats.evictions.append(key[0])
            self._notify("evict", key[0])
            log.info("evicted the model %s (%.1f GB) to make room", key[0], weights.memory_gb)
        if evicted:
            free_device_memory()
        if used + needed_gb > self.budget_gb:
            log.warning(
                "loading %.1f GB over a %.1f GB budget: the other models are in use",
                needed_gb,
                self.budget_gb,
            )

    def _notify(self, kind: str, folder: str) -> None:
        if kind == "hit":
            self.stats.hits += 1
        elif kind == "miss":
            self.stats.misses += 1
        for listener in self.listeners:
            listener(kind, folder)


_shared: Once[ModelCache] = Once()


def shared_cache(settings: ModelSettings) -> ModelCache:
    """The process's one cache (every pipeline of every operation goes through it), made with
    the device and budget of the first caller's settings."""
    return _shared.get(lambda: ModelCache.from_settings(settings))
