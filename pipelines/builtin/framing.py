"""Fitting input images to a clip's frame, and the easing curves that time camera moves."""

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


def ease_in_out(progress: float) -> float:
    """Half linear, half smoothstep: the camera starts moving at once yet settles softly."""
    t = min(max(progress, 0.0), 1.0)
    return 0.5 * t + 0.5 * t * t * (3.0 - 2.0 * t)


def smoothstep(t: float) -> float:
    t = min(max(t, 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)
