"""Loading one registry entry's diffusers pipeline from its local folder, and checking that it
can be, without loading it.

Loading is local only: `local_files_only=True`, and `HF_HUB_OFFLINE=1` (set here, before
diffusers is imported, unless the process already chose: `sfumato models pull` imports the hub
client first and stays online); a missing folder is a `ModelUnavailable` naming the entry and
folder. Weights published in half precision load in float32 on a CPU (models/device.py).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.device import device_memory_gb, load_dtype, torch_dtype
from models.registry import ModelSpec
from models.tuning import apply_tuning

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

log = logging.getLogger(__name__)


class ModelUnavailable(Exception):
    """An entry's weights cannot be loaded (missing folder, unknown class, bad files)."""


def diffusers_class(name: str, pipeline: bool = True) -> Any:
    """The diffusers class of this name: a pipeline (or AutoPipeline), or any class (a
    scheduler) with `pipeline=False`."""
    import diffusers

    found = getattr(diffusers, name, None)
    if found is None or (pipeline and not hasattr(found, "from_pretrained")):
        kind = "pipeline class" if pipeline else "class"
        raise ModelUnavailable(f"diffusers {diffusers.__version__} has no {kind} {name!r}")
    return found


def _class_or_none(name: str) -> Any:
    try:
        return diffusers_class(name)
    except ModelUnavailable:
        return None


def check(spec: ModelSpec, device: str) -> list[str]:
    """What stops this entry from loading on `device`, without loading it (empty: fine)."""
    problems: list[str] = []
    folder = spec.folder
    if not folder.is_dir():
        return [f"{spec.operation}: the folder {folder} of {spec.model} does not exist"]
    index_path = folder / "model_index.json"
    if not index_path.is_file():
        return [f"{spec.operation}: {folder} has no model_index.json (not a diffusers folder)"]
    try:
        diffusers_class(spec.pipeline)
        if spec.scheduler:
            diffusers_class(spec.scheduler, pipeline=False)
    except ModelUnavailable as error:
        problems.append(f"{spec.operation}: {error}")
    index = json.loads(index_path.read_text())
    for component, value in index.items():
        if component.startswith("_") or not isinstance(value, list) or value[0] is None:
            continue
        if not (folder / component).exists():
            if component not in getattr(_class_or_none(spec.pipeline), "_optional_components", []):
                problems.append(f"{spec.operation}: {folder} lacks the {component}/ folder")
        elif spec.variant and (folder / component / "config.json").exists():
            weights = [p.name for p in (folder / component).iterdir() if p.is_file()]
            if not any(f".{spec.variant}." in name for name in weights):
                problems.append(
                    f"{spec.operation}: {component}/ has no {spec.variant!r} variant weights"
                )
    total = device_memory_gb(device)
    if total is not None and spec.memory_gb > total:
        problems.append(
            f"{spec.operation}: needs about {spec.memory_gb:g} GB, the device has {total:.1f} GB"
            + ("" if spec.offload != "none" else ' (set offload = "model")')
        )
    return problems


def _quiet_loading() -> None:
    """No progress bars from loading (they would fill the worker's log)."""
    import diffusers
    import transformers

    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()


@dataclass
class LoadTimes:
    """Seconds each weighted component took to load (onto its device), and the whole load."""

    components: dict[str, float] = field(default_factory=dict)
    total: float = 0.0

    def __str__(self) -> str:
        parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.components.items())
        return f"{self.total:.2f} s ({parts})" if parts else f"{self.total:.2f} s"


def load_pipeline(spec: ModelSpec, device: str) -> Any:
    """The entry's pipeline from its local folder, on `device` or CPU-offloaded."""
    return load_pipeline_timed(spec, device)[0]


def load_pipeline_timed(spec: ModelSpec, device: str) -> tuple[Any, LoadTimes]:
    """`load_pipeline`, and how long each component took."""
    started = time.perf_counter()
    if not spec.folder.is_dir():
        raise ModelUnavailable(
            f"the model of {spec.operation!r} ({spec.model}) is not at {spec.folder}: "
            "pull it (`sfumato models pull`) or fix the registry (see docs/models.md)"
        )
    cls = diffusers_class(spec.pipeline)
    _quiet_loading()
    dtype = torch_dtype(load_dtype(spec.dtype, device))
    times = LoadTimes()
    try:
        # Offloaded weights stay in CPU memory until used: only weights kept on the device
        # are read straight onto it.
        components = load_components(spec, device, dtype, times) if spec.offload == "none" else {}
        pipe = cls.from_pretrained(
            str(spec.folder),
            dtype=dtype,
            variant=spec.variant,
            local_files_only=True,
            **_absent_optional_components(cls, spec),
            **components,
        )
    except (OSError, ValueError) as error:
        raise ModelUnavailable(
            f"cannot load {spec.model} for {spec.operation!r} from {spec.folder}: {error}"
        ) from error
    if spec.scheduler:
        scheduler_class = diffusers_class(spec.scheduler, pipeline=False)
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
    tuned = apply_tuning(pipe, spec.tuning, device) if spec.offload == "none" else []
    times.total = time.perf_counter() - started
    log.info(
        "loaded %s (%s) for %s on %s in %s%s",
        spec.model,
        spec.pipeline,
        spec.operation,
        device,
        times,
        f"; {', '.join(tuned)}" if tuned else "",
    )
    return pipe, times


def load_components(spec: ModelSpec, device: str, dtype: Any, times: LoadTimes) -> dict[str, Any]:
    """The folder's weighted components (the UNet or transformer, the VAE, the text encoders),
    each read from its safetensors straight onto `device` in `dtype` (`device_map`: no full
    copy through CPU memory) and timed into `times`; the pipeline class then loads the rest
    (tokenizers, the scheduler) around them."""
    import importlib

    index = json.loads((spec.folder / "model_index.json").read_text())
    loaded: dict[str, Any] = {}
    for name, value in index.items():
        folder = spec.folder / name
        if name.startswith("_") or not isinstance(value, list) or value[0] is None:
            continue
        if value[0] not in ("diffusers", "transformers") or not folder.is_dir():
            continue
        component_class: Any = getattr(importlib.import_module(value[0]), value[1], None)
        if not _is_torch_module(component_class):
            continue  # a tokenizer, a scheduler: no weights
        variant = spec.variant if spec.variant and _has_variant(folder, spec.variant) else None
        started = time.perf_counter()
        loaded[name] = component_class.from_pretrained(
            str(folder), dtype=dtype, variant=variant, device_map=device, local_files_only=True
        )
        times.components[name] = time.perf_counter() - started
    return loaded


def _is_torch_module(component_class: Any) -> bool:
    import torch

    return isinstance(component_class, type) and issubclass(component_class, torch.nn.Module)


def _has_variant(folder: Path, variant: str) -> bool:
    return any(f".{variant}." in path.name for path in folder.iterdir())


def _absent_optional_components(cls: Any, spec: ModelSpec) -> dict[str, None]:
    """Optional components the folder's index names but a pull did not fetch (a safety checker,
    its feature extractor): loaded as None rather than failing."""
    index = json.loads((spec.folder / "model_index.json").read_text())
    optional = set(getattr(cls, "_optional_components", []))
    return {
        name: None
        for name, value in index.items()
        if name in optional
        and isinstance(value, list)
        and value[0] is not None
        and not (spec.folder / name).is_dir()
    }


def derive_pipeline(class_name: str, base: Any) -> Any:
    """Another pipeline class over the loaded weights of `base` (`from_pipe`: no second copy)."""
    derived = diffusers_class(class_name).from_pipe(base)
    derived.set_progress_bar_config(disable=True)
    return derived


def load_ip_adapter(spec: ModelSpec, base: Any, others: list[Any]) -> None:
    """Load the entry's IP-Adapter into `base`'s weights: the UNet is shared by every pipeline
    made from them, so each of `others` gets the image encoder too (and every call on these
    weights then passes image embeddings: pipelines/diffusion/image_pipeline.py)."""
    adapter = spec.option("ip_adapter")
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
    for pipeline in others:
        if pipeline is not base and "image_encoder" in pipeline.components:
            pipeline.register_modules(
                image_encoder=base.image_encoder, feature_extractor=base.feature_extractor
            )
