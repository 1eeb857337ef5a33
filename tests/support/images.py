"""Hostile images for tests (real images of known colours: benchmarks.testkit.images)."""

from __future__ import annotations

import struct


def animated_bomb(width: int, height: int, frames: int) -> bytes:
    """A GIF of a few hundred bytes whose every frame decodes to the full width x height canvas:
    each frame stores one pixel, the logical screen is huge."""
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0)
    palette = b"\x00\x00\x00\xff\xff\xff"
    one_pixel_frame = (
        b"\x21\xf9\x04\x00\x01\x00\x00\x00"  # graphic control: 10 ms, no transparency
        + b"\x2c"
        + struct.pack("<HHHHB", 0, 0, 1, 1, 0)
        + b"\x02\x02\x44\x01\x00"  # LZW minimum code size 2, one data sub-block, end
    )
    return header + palette + one_pixel_frame * frames + b"\x3b"
