"""The one place that turns an aspect ratio and a resolution into pixels (CONTRACT.md)."""

from __future__ import annotations

import math
from typing import cast

from core.jobs.contract import ImageResolution

IMAGE_RESOLUTION_BASE = {"1K": 1024, "2K": 2048, "4K": 4096}
VIDEO_SHORT_SIDE = {"480p": 480, "720p": 720}


def _round_to_16(value: float) -> int:
    # Half rounds up: 4K 8:1 has height 4096/sqrt(8)/16 = 90.5 -> 91 -> 1456, as CONTRACT.md says.
    return 16 * math.floor(value / 16 + 0.5)


def parse_ratio(aspect_ratio: str) -> tuple[int, int]:
    width, _, height = aspect_ratio.partition(":")
    return int(width), int(height)


def image_size(aspect_ratio: str, resolution: str) -> tuple[int, int]:
    """`side = 16*round(base*sqrt(a/b)/16)` for the width, `sqrt(b/a)` for the height."""
    a, b = parse_ratio(aspect_ratio)
    return image_size_for_ratio(a, b, resolution)


def image_size_for_ratio(a: float, b: float, resolution: str) -> tuple[int, int]:
    """The same formula for any ratio a:b, e.g. an upscaled image's own width:height."""
    base = IMAGE_RESOLUTION_BASE[resolution]
    return _round_to_16(base * math.sqrt(a / b)), _round_to_16(base * math.sqrt(b / a))


def resolution_of(width: int, height: int) -> ImageResolution:
    """The resolution class whose area is nearest an image's (for pricing edits)."""
    area = width * height
    nearest = min(
        IMAGE_RESOLUTION_BASE, key=lambda name: abs(IMAGE_RESOLUTION_BASE[name] ** 2 - area)
    )
    return cast(ImageResolution, nearest)


def video_size(width_ratio: float, height_ratio: float, resolution: str) -> tuple[int, int]:
    """The short side is fixed by the resolution; the long side is the nearest multiple of 16."""
    short = VIDEO_SHORT_SIDE[resolution]
    if width_ratio >= height_ratio:
        return _round_to_16(short * width_ratio / height_ratio), short
    return short, _round_to_16(short * height_ratio / width_ratio)
