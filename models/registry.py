"""The model registry: which weights, pipeline class and limits serve each operation.

A TOML file, `models.toml` in the models directory (`sfumato models pull` writes it; the path
can be overridden with `SFUMATO_MODELS_FILE`), with one table per operation:

    [operations.generate]
    preset = "sdxl"                 # written by `sfumato models pull`; absent: written by hand
    model = "stabilityai/stable-diffusion-xl-base-1.0"   # the model's public id (informative)
    folder = "sdxl-base"            # its local copy; relative paths start at this file's folder
    pipeline = "StableDiffusionXLPipeline"   # a diffusers class name (AutoPipeline* too)
    family = "sdxl"                 # steps and guidance presets: sd15, sdxl, sd3, flux, other
    dtype = "float16"
    variant = "fp16"                # which weight files (model.fp16.safetensors); optional
    scheduler = "EulerDiscreteScheduler"   # optional: replaces the folder's scheduler
    batch_limit = 4                 # images per pipeline call
    memory_gb = 9.5                 # what the loaded weights take on the device
    offload = "none"                # "model" or "sequential": accelerate CPU offload on CUDA
    steps_range = [1, 4]            # optional: the steps a create may ask (default: family's)
    guidance_range = [0.0, 0.0]     # optional: the guidance a create may ask (likewise)
    licence = "sai-nc-community"    # optional: shown by GET /v1/models (a preset's by default)
    [operations.generate.tuning]     # compile, channels-last, fused QKV, VAE tiling/slicing
    compile = "denoiser"            # (models/tuning.py); compiled at warm-up, never in a job
    [operations.generate.options]   # free-form, read by the operation's pipeline
    steps = { low = 20, medium = 30, high = 40 }
    ip_adapter = { folder = "ip-adapter", weight_name = "ip-adapter_sdxl.safetensors" }

A `folder` inside an option table is resolved like the entry's own.

LoRA adapters, one table each, name the models (entry ids: a preset's name, else the folder's)
they fit; a create applies them by name (`loras`), at a scale:

    [loras.pixel-art]
    model = "nerijs/pixel-art-xl"   # its public id (informative)
    folder = "loras/pixel-art"
    weight_name = "pixel-art-xl.safetensors"   # optional: the file in the folder
    bases = ["sdxl"]

Operations whose entries name the same folder, dtype and variant share one set of weights in
the cache (text-to-image, image-to-image and inpainting classes made with `from_pipe`).
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.settings import ModelSettings
from models.tuning import Tuning

DTYPES = ("float32", "float16", "bfloat16")
FAMILIES = ("sd15", "sdxl", "sd3", "flux", "other")


class RegistryError(Exception):
    """The registry file is missing, unreadable or invalid; the message says where and why."""


class ModelSpec(BaseModel):
    """One operation's model, as the registry file gives it (folder resolved to a full path)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operation: str
    preset: str | None = None
    model: str
    folder: Path
    pipeline: str
    family: Literal["sd15", "sdxl", "sd3", "flux", "other"] = "other"
    dtype: Literal["float32", "float16", "bfloat16"] = "float16"
    variant: str | None = None
    scheduler: str | None = None
    batch_limit: int = Field(default=1, ge=1, le=64)
    memory_gb: float = Field(default=0.0, ge=0)
    offload: Literal["none", "model", "sequential"] = "none"
    steps_range: tuple[int, int] | None = None
    guidance_range: tuple[float, float] | None = None
    licence: str | None = None
    tuning: Tuning = Field(default_factory=Tuning)
    options: dict[str, Any] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        """The model's id in requests (`model`) and `GET /v1/models`: its preset's name, else
        its folder's."""
        return self.preset or self.folder.name

    @property
    def weights_key(self) -> tuple[str, str, str]:
        """Entries with the same key share one loaded set of weights."""
        return (str(self.folder), self.dtype, self.variant or "")

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def __hash__(self) -> int:  # options is a dict; the operation and weights identify a spec
        return hash((self.operation, self.pipeline, self.weights_key))


class AdapterSpec(BaseModel):
    """A LoRA adapter, as the registry file gives it (folder resolved to a full path)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    folder: Path
    weight_name: str | None = None
    bases: tuple[str, ...] = Field(min_length=1)


class ModelRegistry:
    """The operations a registry file configures, each with its `ModelSpec`, and the LoRA
    adapters installed for its models."""

    def __init__(
        self,
        path: Path,
        specs: dict[str, ModelSpec],
        adapters: dict[str, AdapterSpec] | None = None,
    ) -> None:
        self.path = path
        self._specs = specs
        self._adapters = adapters or {}

    def adapters_for(self, model_id: str) -> list[AdapterSpec]:
        """The adapters that fit the model `model_id`, by name."""
        return [
            adapter for _, adapter in sorted(self._adapters.items()) if model_id in adapter.bases
        ]

    def operations(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[ModelSpec]:
        return [self._specs[name] for name in self.operations()]

    def has(self, operation: str) -> bool:
        return operation in self._specs

    def spec(self, operation: str) -> ModelSpec:
        try:
            return self._specs[operation]
        except KeyError:
            raise RegistryError(
                f"the model registry {self.path} has no [operations.{operation}] entry"
            ) from None


def load_registry(path: Path) -> ModelRegistry:
    """Read and validate a registry file; every problem is a `RegistryError` naming the entry."""
    try:
        document = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise RegistryError(f"the model registry {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise RegistryError(f"cannot read the model registry {path}: {error}") from None
    unknown = set(document) - {"operations", "loras"}
    if unknown:
        raise RegistryError(f"{path}: unknown top-level keys {sorted(unknown)}")
    operations = document.get("operations", {})
    if not isinstance(operations, dict) or not operations:
        raise RegistryError(f"{path}: no [operations.<name>] tables")
    specs: dict[str, ModelSpec] = {}
    for name, entry in operations.items():
        if not isinstance(entry, dict):
            raise RegistryError(f"{path}: [operations.{name}] must be a table")
        folder = Path(str(entry.get("folder", "")))
        if str(folder) and not folder.is_absolute():
            folder = (path.parent / folder).resolve()
        for option in entry.get("options", {}).values():
            if isinstance(option, dict) and "folder" in option:  # e.g. an IP-Adapter's folder
                option["folder"] = str((path.parent / str(option["folder"])).resolve())
        try:
            specs[name] = ModelSpec(**{**entry, "operation": name, "folder": folder})
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
                for item in error.errors()
            )
            raise RegistryError(f"{path}: [operations.{name}] {problems}") from None
        if not entry.get("folder"):
            raise RegistryError(f"{path}: [operations.{name}] folder: field required")
    return ModelRegistry(path, specs, _adapters(path, document.get("loras", {})))


def _adapters(path: Path, tables: Any) -> dict[str, AdapterSpec]:
    if not isinstance(tables, dict):
        raise RegistryError(f"{path}: [loras] must hold one table per adapter")
    adapters: dict[str, AdapterSpec] = {}
    for name, entry in tables.items():
        if not isinstance(entry, dict) or not entry.get("folder"):
            raise RegistryError(f"{path}: [loras.{name}] folder: field required")
        folder = Path(str(entry["folder"]))
        if not folder.is_absolute():
            folder = (path.parent / folder).resolve()
        try:
            adapters[name] = AdapterSpec(**{**entry, "name": name, "folder": folder})
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
                for item in error.errors()
            )
            raise RegistryError(f"{path}: [loras.{name}] {problems}") from None
    return adapters


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, _mtime_ns: int, _size: int) -> ModelRegistry:
    return load_registry(path)


def cached_registry(path: Path) -> ModelRegistry:
    """One parsed registry per file version and process (a pull rewrites it)."""
    try:
        stat = path.stat()
    except OSError:
        return load_registry(path)  # raises the RegistryError that says so
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


def find_registry(settings: ModelSettings) -> ModelRegistry:
    """The registry of these settings: `SFUMATO_MODELS_FILE`, else `models.toml` in the
    models directory; a clear error when there is none."""
    path = settings.registry_file
    if not path.exists() and not settings.registry_file_is_explicit:
        raise RegistryError(
            f"no model registry at {path}: pull a model (`sfumato models pull sd-turbo`) or set "
            "SFUMATO_MODELS_FILE (see docs/models.md)"
        )
    return cached_registry(path)


def registered_operations(settings: ModelSettings) -> list[str]:
    """The operations the registry names; none when there is no registry (a named file that is
    missing or invalid is an error: the worker must not silently fall back to builtin)."""
    path = settings.registry_file
    if not path.exists() and not settings.registry_file_is_explicit:
        return []
    return cached_registry(path).operations()
