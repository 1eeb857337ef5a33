"""Tuning a loaded pipeline for speed as its registry entry's `tuning` table asks:

    [operations.generate.tuning]
    compile = "denoiser"      # torch.compile the UNet or transformer; "denoiser+vae" adds the
                              # VAE decoder; "none" (default)
    channels_last = true      # the denoiser's and VAE's convolutions in NHWC (faster on CUDA)
    fuse_qkv = true           # one matmul for each attention's query, key and value
    vae_tiling = false        # decode large outputs tile by tile (bounded memory)
    vae_slicing = false       # decode a batch one image at a time (bounded memory)
    warm_up = ["1:1"]         # the aspect ratios compiled at warm-up (each batch size too)
    cpu = false               # compile on a CPU too (tests; a CPU worker's start-up pays it)

Compiling happens once per input shape, at the worker's warm-up (`warming`), never inside a
user's job: a compiled module runs its compiled code only for shapes warmed up, any other shape
eagerly (the same weights, the same result within rounding), so an unusual size never stalls a
job for a recompilation. `apply_tuning` returns what it did, for the start-up log.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

log = logging.getLogger(__name__)

SHAPES_ATTRIBUTE = "_sfumato_compiled_shapes"
# Shapes a compiled module keeps code for (torch's default of 8 would evict warmed-up shapes).
RECOMPILE_LIMIT = 64


class Tuning(BaseModel):
    """A registry entry's `tuning` table (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    compile: Literal["none", "denoiser", "denoiser+vae"] = "none"
    channels_last: bool = False
    fuse_qkv: bool = False
    vae_tiling: bool = False
    vae_slicing: bool = False
    warm_up: tuple[str, ...] = ("1:1",)
    cpu: bool = False

    def compiles_on(self, device: str) -> bool:
        return self.compile != "none" and (device.startswith("cuda") or self.cpu)


@dataclass
class CompiledShapes:
    """The input shapes one compiled module has code for, and the calls that ran eagerly."""

    name: str
    ready: set[tuple[Any, ...]] = field(default_factory=set)
    warming: bool = False
    # Set while a call runs with LoRA layers in the weights: the compiled graphs were traced
    # without them (running them would recompile inside the job), so that call runs eagerly.
    eager_only: bool = False
    eager_calls: int = 0


def shape_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The shapes and dtypes of a call's tensors (one level into dicts: SDXL's added
    conditions), and its other arguments' types: what a compiled graph is specialised on."""
    import torch

    def of(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return (tuple(value.shape), value.dtype)
        if isinstance(value, dict):
            return tuple(sorted((key, of(item)) for key, item in value.items()))
        if isinstance(value, list | tuple):
            return tuple(of(item) for item in value)
        return type(value).__name__ if value is not None else None

    return (of(args), tuple(sorted((key, of(value)) for key, value in kwargs.items())))


def compile_by_shape(module: Any, name: str) -> CompiledShapes:
    """`module.forward` compiled, used for the shapes run while `warming` and eager otherwise."""
    import torch

    torch._dynamo.config.recompile_limit = max(
        torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT
    )
    eager = module.forward
    compiled = torch.compile(eager, dynamic=False)
    shapes = CompiledShapes(name)

    @functools.wraps(eager)
    def forward(*args: Any, **kwargs: Any) -> Any:
        key = shape_key(args, kwargs)
        if shapes.eager_only:
            shapes.eager_calls += 1
            return eager(*args, **kwargs)
        if key in shapes.ready:
            return compiled(*args, **kwargs)
        if shapes.warming:
            output = compiled(*args, **kwargs)
            shapes.ready.add(key)
            return output
        shapes.eager_calls += 1
        return eager(*args, **kwargs)

    module.forward = forward
    setattr(module, SHAPES_ATTRIBUTE, shapes)
    return shapes


def denoiser_of(pipe: Any) -> Any:
    return getattr(pipe, "unet", None) or getattr(pipe, "transformer", None)


def apply_tuning(pipe: Any, tuning: Tuning, device: str) -> list[str]:
    """Apply the entry's tuning to a loaded pipeline; what was done, in words."""
    import torch

    done: list[str] = []
    denoiser = denoiser_of(pipe)
    vae = getattr(pipe, "vae", None)
    if tuning.channels_last:
        for label, module in (("denoiser", denoiser), ("vae", vae)):
            if module is not None:
                module.to(memory_format=torch.channels_last)
                done.append(f"{label} channels-last")
    if tuning.fuse_qkv:
        for label, module in (("denoiser", denoiser), ("vae", vae)):
            if module is not None and hasattr(module, "fuse_qkv_projections"):
                module.fuse_qkv_projections()
                done.append(f"{label} fused QKV")
    if tuning.vae_tiling and vae is not None and hasattr(vae, "enable_tiling"):
        vae.enable_tiling()
        done.append("VAE tiling")
    if tuning.vae_slicing and vae is not None and hasattr(vae, "enable_slicing"):
        vae.enable_slicing()
        done.append("VAE slicing")
    if tuning.compiles_on(device):
        if denoiser is not None:
            compile_by_shape(denoiser, type(denoiser).__name__)
            done.append(f"{type(denoiser).__name__} compiled at warm-up")
        decoder = getattr(vae, "decoder", None)
        if tuning.compile == "denoiser+vae" and decoder is not None:
            compile_by_shape(decoder, "VAE decoder")
            done.append("VAE decoder compiled at warm-up")
    elif tuning.compile != "none":
        done.append(f"compile skipped on {device} (set tuning.cpu to compile there)")
    return done


def compiled_shapes(pipe: Any) -> list[CompiledShapes]:
    """The compiled modules of a pipeline's components (shared by pipelines made with
    `from_pipe`), each once."""
    found: dict[int, CompiledShapes] = {}
    for component in getattr(pipe, "components", {}).values():
        for module in (component, getattr(component, "decoder", None)):
            shapes = getattr(module, SHAPES_ATTRIBUTE, None)
            if isinstance(shapes, CompiledShapes):
                found[id(shapes)] = shapes
    return list(found.values())


@contextmanager
def eagerly(pipe: Any, when: bool = True) -> Iterator[None]:
    """Inside (when `when`): the pipeline's compiled modules run eagerly."""
    shapes = compiled_shapes(pipe) if when else []
    for each in shapes:
        each.eager_only = True
    try:
        yield
    finally:
        for each in shapes:
            each.eager_only = False


@contextmanager
def warming(pipe: Any) -> Iterator[list[CompiledShapes]]:
    """Inside: the pipeline's compiled modules compile (once) each shape they are called with."""
    shapes = compiled_shapes(pipe)
    for each in shapes:
        each.warming = True
    try:
        yield shapes
    finally:
        for each in shapes:
            each.warming = False
