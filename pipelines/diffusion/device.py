"""The accelerator: generators seeded per image, and telling its out-of-memory errors apart."""

from __future__ import annotations

from typing import Any


def generator_for(seed: int, device: str) -> Any:
    """A generator seeded for one image: the same seed gives the same latents, batched or not."""
    import torch

    return torch.Generator(device="cpu" if device.startswith("mps") else device).manual_seed(
        seed % 2**63
    )


def is_out_of_memory(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.cuda.OutOfMemoryError)
