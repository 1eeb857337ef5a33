"""Fitting a picture to a frame: covering it (scaled and centre-cropped) or placing it inside."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from PIL import Image


def cover(image: Image.Image, width: int, height: int) -> NDArray[np.uint8]:
    """`image` scaled to fill `width` x `height` and centre-cropped: no borders, no stretching."""
    source = image.convert("RGB")
    scale = max(width / source.width, height / source.height)
    crop_width, crop_height = width / scale, height / scale
    left = (source.width - crop_width) / 2
    top = (source.height - crop_height) / 2
    box = (left, top, left + crop_width, top + crop_height)
    fitted = source.resize((width, height), Image.Resampling.LANCZOS, box=box, reducing_gap=3.0)
    return np.asarray(fitted, dtype=np.uint8)


def placement(
    source_width: int, source_height: int, width: int, height: int
) -> tuple[int, int, int, int]:
    """Where the source goes in the target: left, top, width, height (fit inside, centred)."""
    scale = min(width / source_width, height / source_height)
    placed_width = min(width, max(1, round(source_width * scale)))
    placed_height = min(height, max(1, round(source_height * scale)))
    return (width - placed_width) // 2, (height - placed_height) // 2, placed_width, placed_height
