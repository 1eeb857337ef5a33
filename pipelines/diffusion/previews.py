"""Live previews from latents: the picture being denoised, approximated per latent pixel with its
family's linear latent-to-RGB factors (`latent_factors.py`): a matrix product on the device and a
few KB copied back, no VAE decode. A preview is at most PREVIEW_SIDE px on its longest side (the
latents of a 1024 px SDXL image are 128 px; they are enlarged to 256 px)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

from pipelines.diffusion.latent_factors import FACTORS_OF_FAMILY, LatentFactors

PREVIEW_SIDE = 256


def factors_for(family: str, pipeline_class: str = "") -> LatentFactors | None:
    """The factors of a registry family; video models (registered as "other") by their class."""
    if family in FACTORS_OF_FAMILY:
        return FACTORS_OF_FAMILY[family]
    if pipeline_class.startswith("Wan"):
        return FACTORS_OF_FAMILY["wan"]
    if pipeline_class.startswith("LTX"):
        return FACTORS_OF_FAMILY["ltx"]
    return None


def spatial_latents(latents: Any, factors: LatentFactors, aspect: float, frames: int = 1) -> Any:
    """One image's latents as (channels, height, width): diffusers keeps FLUX's and LTX's as
    tokens (sequence, channels x patch area; LTX's frame after frame, `frames` of them), and
    video latents with a frame axis; of a video the middle frame is shown. `aspect` (width /
    height of the output) unpacks a token sequence."""
    if latents.ndim == 4:  # (channels, frames, height, width): a video's
        latents = latents[:, latents.shape[1] // 2]
    if latents.ndim == 3:
        return latents
    if frames > 1 and latents.shape[0] % frames == 0:
        per_frame = latents.shape[0] // frames
        latents = latents[per_frame * (frames // 2) : per_frame * (frames // 2 + 1)]
    tokens, width = latents.shape
    patch = math.isqrt(width // factors.channels)
    rows = max(1, round(math.sqrt(tokens / aspect)))
    while tokens % rows:  # the nearest factorisation of the sequence
        rows -= 1
    columns = tokens // rows
    if patch == 1:
        return latents.reshape(rows, columns, factors.channels).permute(2, 0, 1)
    grid = latents.reshape(rows, columns, factors.channels, patch, patch)
    return grid.permute(2, 0, 3, 1, 4).reshape(factors.channels, rows * patch, columns * patch)


def fits(latents: Any, factors: LatentFactors) -> bool:
    """Whether these latents (one image's, as `spatial_latents` takes them) have the factors'
    channels: a model of the family with a latent format of its own (a test's tiny model, a
    fine-tune with another VAE) gets no preview rather than a wrong one."""
    if latents.ndim == 2:  # tokens: channels times a square patch
        width = latents.shape[1]
        patch = math.isqrt(width // factors.channels) if width % factors.channels == 0 else 0
        return patch > 0 and patch * patch * factors.channels == width
    return latents.ndim in (3, 4) and latents.shape[0] == factors.channels


def latent_preview(
    latents: Any, factors: LatentFactors, aspect: float = 1.0, frames: int = 1
) -> Image.Image | None:
    """The preview of one image's latents (see `spatial_latents` for their shapes); None when
    they do not `fit` the factors."""
    import torch

    if not fits(latents, factors):
        return None
    spatial = spatial_latents(latents.detach(), factors, aspect, frames)
    weights = torch.tensor(factors.rows, dtype=torch.float32, device=spatial.device)
    bias = torch.tensor(factors.bias, dtype=torch.float32, device=spatial.device)
    rgb = torch.einsum("chw,cr->hwr", spatial.float(), weights) + bias
    pixels = ((rgb.clamp(-1, 1) + 1) * 127.5).to(torch.uint8).cpu().numpy()
    image = Image.fromarray(np.ascontiguousarray(pixels), "RGB")
    scale = PREVIEW_SIDE / max(image.size)
    if scale > 1:
        size = (max(1, int(image.width * scale)), max(1, int(image.height * scale)))
        image = image.resize(size, Image.Resampling.BILINEAR)
    elif scale < 1:
        image.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE), Image.Resampling.BILINEAR)
    return image
