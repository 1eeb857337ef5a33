"""The device models run on: which one, how much memory it has, which dtype suits it."""

from __future__ import annotations

import gc
import logging
import math
from typing import Any

log = logging.getLogger(__name__)

# Half-precision kernels on a CPU are slow or missing: weights published in fp16 or bf16 (the
# presets fetch one precision only) are loaded in float32 there.
CPU_DTYPE = "float32"


def resolve_device(requested: str = "auto") -> str:
    """`requested` (cpu, cuda, cuda:1, ...), or CUDA when there is one for "auto"."""
    import torch

    if requested in ("", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def device_memory_gb(device: str) -> float | None:
    """The device's total memory, or None for the CPU (bounded by the machine, not a card)."""
    import torch

    if not device.startswith("cuda"):
        return None
    return float(torch.cuda.get_device_properties(torch.device(device)).total_memory) / 2**30


def memory_budget_gb(device: str, configured_gb: float = 0.0) -> float:
    """What the model cache may fill: the configured budget, else 90 % of the GPU, else
    unbounded on the CPU."""
    if configured_gb > 0:
        return configured_gb
    total = device_memory_gb(device)
    return math.inf if total is None else 0.9 * total


def load_dtype(dtype: str, device: str) -> str:
    """The dtype to load weights in on `device` (float32 on the CPU, see CPU_DTYPE)."""
    if device.startswith("cpu") and dtype != CPU_DTYPE:
        return CPU_DTYPE
    return dtype


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def free_device_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
