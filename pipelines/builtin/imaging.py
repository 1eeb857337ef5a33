"""Small image helpers the builtin pipelines and painting styles share.

Arrays are float32 RGB in [0, 1], shaped rows x columns x 3, unless a name says otherwise.
"""

from __future__ import annotations

import logging
import math
import resource
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray
from PIL import Image

Float = NDArray[np.floating[Any]]

LUMA = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)


def to_array(image: Image.Image) -> Float:
    return np.asarray(image.convert("RGB"), dtype=np.float32) * np.float32(1.0 / 255.0)


def to_image(array: Float) -> Image.Image:
    return Image.fromarray(np.clip(array * 255.0 + 0.5, 0.0, 255.0).astype(np.uint8), "RGB")


def luma(array: Float) -> Float:
    return array @ LUMA


def capped_size(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """`width` x `height` shrunk (never grown) to at most `max_pixels`, keeping the ratio."""
    if width * height <= max_pixels:
        return width, height
    factor = math.sqrt(max_pixels / (width * height))
    return max(1, round(width * factor)), max(1, round(height * factor))


def resized(array: Float, width: int, height: int) -> Float:
    """Area averaging when shrinking (no aliasing), bicubic when enlarging."""
    if array.shape[1] == width and array.shape[0] == height:
        return array
    shrinking = width * height < array.shape[0] * array.shape[1]
    interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_CUBIC
    out = np.asarray(cv2.resize(array, (width, height), interpolation=interpolation), np.float32)
    # OpenCV drops a single channel's axis.
    return out.reshape(height, width, -1) if array.ndim == 3 else out


def blurred(array: Float, sigma: float) -> Float:
    """A Gaussian blur whose cost does not grow with `sigma`: wide blurs run on a smaller copy."""
    if sigma < 0.5:
        return array
    height, width = array.shape[:2]
    shrink = max(1, int(sigma / 4))
    if shrink == 1 or min(width, height) // shrink < 4:
        return _gaussian(array, sigma)
    small = resized(array, max(1, width // shrink), max(1, height // shrink))
    return resized(_gaussian(small, sigma / shrink), width, height)


def _gaussian(array: Float, sigma: float) -> Float:
    out = cv2.GaussianBlur(array, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    return np.asarray(out, np.float32).reshape(array.shape)


def detail_upsample(result: Float, guide: Float, detail: float = 1.0) -> Float:
    """Enlarge a low-resolution result to `guide`'s size and add back the guide's fine detail.

    Whatever texture the result has (brush strokes) is kept; the edges and detail that only
    exist at full size (what shrinking the guide lost) are added to it, scaled by `detail`.
    """
    height, width = guide.shape[:2]
    low_height, low_width = result.shape[:2]
    if (low_width, low_height) == (width, height):
        return result
    guide_luma = luma(guide)
    lost = guide_luma - resized(resized(guide_luma, low_width, low_height), width, height)
    return np.clip(resized(result, width, height) + lost[..., None] * np.float32(detail), 0, 1)


def peak_memory_mib() -> int:
    """This process's peak resident memory so far (Linux reports kibibytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def log_peak_memory(log: logging.Logger, operation: str, width: int, height: int) -> None:
    log.debug("%s %dx%d done; peak rss %d MiB", operation, width, height, peak_memory_mib())
