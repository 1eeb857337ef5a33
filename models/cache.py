"""The process's loaded diffusion pipelines: loaded once, shared, evicted least-recently-used.

How a pipeline module gets its diffusers pipeline (the interface for pipelines/diffusion/*):

    from models.cache import shared_cache
    from models.registry import configured_registry

    spec = configured_registry().spec("animate")          # the operation's registry entry
    with shared_cache().pipeline_for(spec) as pipe:        # spec.pipeline's class, loaded once
        frames = pipe(image=..., generator=..., callback_on_step_end=...).frames
    with shared_cache().pipeline_for(spec, task="inpainting") as pipe:   # derived with from_pipe
        ...

`task` is None (the class the entry names), "text-to-image", "image-to-image" or "inpainting"
(the AutoPipelineFor* class of that task, made from the loaded weights with `from_pipe`, so no
second copy of the weights), or any diffusers pipeline class name (also made with `from_pipe`).
Inside the `with` block the weights are pinned (never evicted) and locked to this thread: the
components (and the stateful scheduler) are shared, so one call runs at a time per set of
weights, as one GPU would anyway. `shared_cache().ensure(spec)` loads at worker start-up and
`check(spec)` lists what is wrong with an entry without loading it.

Loading is local only: `local_files_only=True` and `HF_HUB_OFFLINE=1` (set here, before
diffusers is imported); a missing folder is a `ModelUnavailable` naming the entry and folder.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from models.registry import ModelSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

log = logging.getLogger(__name__)

AUTO_TASKS = {
    "text-to-image": "AutoPipelineForText2Image",
    "image-to-image": "AutoPipelineForImage2Image",
    "inpainting": "AutoPipelineForInpainting",
}

# ("hit" | "miss" | "evict", the weights' folder): the place where metrics are wired.
CacheListener = Callable[[str, str], None]


class ModelUnavailable(Exception):
    """An entry's weights cannot be loaded (missing folder, unknown class, bad files)."""


def pipeline_class(name: str) -> Any:
    """The diffusers class of this name (a pipeline or an AutoPipeline)."""
    import diffusers

    found = getattr(diffusers, name, None)
    if found is None or not hasattr(found, "from_pretrained"):
        raise ModelUnavailable(f"diffusers {diffusers.__version__} has no pipeline class {name!r}")
    return found


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def resolve_device(requested: str | None = None) -> str:
    """`SFUMATO_MODEL_DEVICE` (cpu, cuda, cuda:1, ...), else CUDA when there is one."""
    import torch

    device = requested or os.environ.get("SFUMATO_MODEL_DEVICE") or "auto"
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def device_memory_gb(device: str) -> float | None:
    """The device's total memory, or None for the CPU (bounded by the machine, not a card)."""
    import torch

    if not device.startswith("cuda"):
        return None
    return float(torch.cuda.get_device_properties(torch.device(device)).total_memory) / 2**30


def check(spec: ModelSpec, device: str | None = None) -> list[str]:
    """What stops this entry from loading on this machine, without loading it (empty: fine)."""
    problems: list[str] = []
    folder = spec.folder
    if not folder.is_dir():
        return [f"{spec.operation}: the folder {folder} of {spec.model} does not exist"]
    index_path = folder / "model_index.json"
    if not index_path.is_file():
        return [f"{spec.operation}: {folder} has no model_index.json (not a diffusers folder)"]
    try:
        pipeline_class(spec.pipeline)
        if spec.scheduler:
            pipeline_class_or_scheduler(spec.scheduler)
    except ModelUnavailable as error:
        problems.append(f"{spec.operation}: {error}")
    index = json.loads(index_path.read_text())
    for component, value in index.items():
        if component.startswith("_") or not isinstance(value, list) or value[0] is None:
            continue
        if not (folder / component).exists():
            problems.append(f"{spec.operation}: {folder} lacks the {component}/ folder")
        elif spec.variant and (folder / component / "config.json").exists():
            weights = [p.name for p in (folder / component).iterdir() if p.is_file()]
            if not any(f".{spec.variant}." in name for name in weights):
                problems.append(
                    f"{spec.operation}: {component}/ has no {spec.variant!r} variant weights"
                )
    total = device_memory_gb(resolve_device(device))
    if total is not None and spec.memory_gb > total:
        problems.append(
            f"{spec.operation}: needs about {spec.memory_gb:g} GB, the device has {total:.1f} GB"
            + ("" if spec.offload != "none" else ' (set offload = "model")')
        )
    return problems


def pipeline_class_or_scheduler(name: str) -> Any:
    import diffusers

    found = getattr(diffusers, name, None)
    if found is None:
        raise ModelUnavailable(f"diffusers {diffusers.__version__} has no class {name!r}")
    return found


@dataclass
class _Weights:
    """One loaded set of weights and the pipelines made from it."""

    key: tuple[str, str, str]
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
        device: str | None = None,
        budget_gb: float | None = None,
        loader: Callable[[ModelSpec, str], Any] | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.budget_gb = _budget(self.device) if budget_gb is None else budget_gb
        self._load = loader or load_pipeline
        self._weights: OrderedDict[tuple[str, str, str], _Weights] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = CacheStats()
        self.listeners: list[CacheListener] = []

    def loaded(self) -> list[tuple[str, str, str]]:
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

    def _acquire(self, spec: ModelSpec, task: str | None) -> tuple[_Weights, Any]:
        class_name = AUTO_TASKS.get(task or "", task or spec.pipeline)
        with self._lock:
            weights = self._weights.get(spec.weights_key)
            if weights is not None and class_name in weights.pipelines:
                self._weights.move_to_end(spec.weights_key)
                weights.users += 1
                self._notify("hit", str(spec.folder))
                return weights, weights.pipelines[class_name]
            self._notify("miss", str(spec.folder))
            if weights is None:
                self._make_room(spec.memory_gb)
                base = self._load(spec, self.device)
                weights = _Weights(spec.weights_key, spec.memory_gb, {spec.pipeline: base})
                self._weights[spec.weights_key] = weights
            weights.memory_gb = max(weights.memory_gb, spec.memory_gb)
            if spec.option("ip_adapter") and not weights.ip_adapter:
                _load_ip_adapter(weights, spec)
            if class_name not in weights.pipelines:
                base = next(iter(weights.pipelines.values()))
                derived = pipeline_class(class_name).from_pipe(base)
                derived.set_progress_bar_config(disable=True)
                weights.pipelines[class_name] = derived
            self._weights.move_to_end(spec.weights_key)
            weights.users += 1
            return weights, weights.pipelines[class_name]

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
        _free_device_memory()

    def _make_room(self, needed_gb: float) -> None:
        """Evict unpinned weights, oldest use first, until `needed_gb` fits the budget."""
        used = sum(weights.memory_gb for weights in self._weights.values())
        for key in list(self._weights):
            if used + needed_gb <= self.budget_gb:
                return
            weights = self._weights[key]
            if weights.users:
                continue
            del self._weights[key]
            used -= weights.memory_gb
            self.stats.evictions.append(key[0])
            self._notify("evict", key[0])
            log.info("evicted the model %s (%.1f GB) to make room", key[0], weights.memory_gb)
        _free_device_memory()
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


def _load_ip_adapter(weights: _Weights, spec: ModelSpec) -> None:
    """Load the entry's IP-Adapter into its weights: the UNet is shared by every pipeline made
    from them, so each gets the image encoder too (and every call on these weights then passes
    image embeddings: pipelines/diffusion/image_pipeline.py)."""
    adapter = spec.option("ip_adapter")
    base = next(iter(weights.pipelines.values()))
    try:
        base.load_ip_adapter(
            str(adapter["folder"]),
            subfolder=adapter.get("subfolder", ""),
            weight_name=adapter["weight_name"],
            image_encoder_folder=adapter.get("image_encoder_folder", "image_encoder"),
            local_files_only=True,
        )
    except (OSError, ValueError, KeyError) as error:
        raise ModelUnavailable(
            f"cannot load the IP-Adapter of {spec.operation!r} from {adapter}: {error}"
        ) from error
    for pipeline in weights.pipelines.values():
        if pipeline is not base and "image_encoder" in pipeline.components:
            pipeline.register_modules(
                image_encoder=base.image_encoder, feature_extractor=base.feature_extractor
            )
    weights.ip_adapter = True


def _budget(device: str) -> float:
    configured = float(os.environ.get("SFUMATO_MODEL_MEMORY_GB") or 0)
    if configured > 0:
        return configured
    total = device_memory_gb(device)
    return math.inf if total is None else 0.9 * total


def _free_device_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _quiet_loading() -> None:
    """No progress bars from loading (they would fill the worker's log)."""
    import diffusers
    import transformers

    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()


def load_pipeline(spec: ModelSpec, device: str) -> Any:
    """The entry's pipeline from its local folder, on `device` or CPU-offloaded."""
    if not spec.folder.is_dir():
        raise ModelUnavailable(
            f"the model of {spec.operation!r} ({spec.model}) is not at {spec.folder}: "
            "download it there or fix SFUMATO_MODELS_FILE (see docs/models.md)"
        )
    cls = pipeline_class(spec.pipeline)
    _quiet_loading()
    try:
        pipe = cls.from_pretrained(
            str(spec.folder),
            dtype=torch_dtype(spec.dtype),
            variant=spec.variant,
            local_files_only=True,
        )
    except (OSError, ValueError) as error:
        raise ModelUnavailable(
            f"cannot load {spec.model} for {spec.operation!r} from {spec.folder}: {error}"
        ) from error
    if spec.scheduler:
        scheduler_class = pipeline_class_or_scheduler(spec.scheduler)
        pipe.scheduler = scheduler_class.from_config(pipe.scheduler.config)
    pipe.set_progress_bar_config(disable=True)
    if spec.offload != "none" and device.startswith("cuda"):
        if spec.offload == "model":
            pipe.enable_model_cpu_offload(device=device)
        else:
            pipe.enable_sequential_cpu_offload(device=device)
    else:
        if spec.offload != "none":
            log.info("offload ignored for %s: the device is %s", spec.model, device)
        pipe.to(device)
    log.info("loaded %s (%s) for %s on %s", spec.model, spec.pipeline, spec.operation, device)
    return pipe


_shared: ModelCache | None = None
_shared_lock = threading.Lock()


def shared_cache() -> ModelCache:
    """The process's one cache (every pipeline of every operation goes through it)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ModelCache()
        return _shared
