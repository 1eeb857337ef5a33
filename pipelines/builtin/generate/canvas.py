"""The float32 canvases the painters draw on: where pixels fall in layout units, colours as
arrays, and the ways colour is mixed into a canvas."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.builtin.imaging import Float

WHITE = np.ones(3, dtype=np.float32)


@dataclass(frozen=True)
class PixelGrid:
    """An image's pixel centres in layout units (the image's shorter side is one unit)."""

    width: int
    height: int
    scale: float  # pixels per unit
    u: Float  # each column's centre
    v: Float  # each row's centre

    @classmethod
    def of(cls, width: int, height: int) -> PixelGrid:
        scale = float(min(width, height))
        u = ((np.arange(width, dtype=np.float32) + 0.5) / scale).astype(np.float32)
        v = ((np.arange(height, dtype=np.float32) + 0.5) / scale).astype(np.float32)
        return cls(width, height, scale, u, v)


def as_colour(rgb: Sequence[float]) -> Float:
    return np.asarray(rgb, dtype=np.float32)


def screen(canvas: Float, colour: Float, amount: Float) -> None:
    """Screen-blend `colour` scaled by `amount` (rows x columns) into the canvas, in place."""
    for channel in range(3):
        plane = canvas[..., channel]
        plane += (1.0 - plane) * (amount * colour[channel])


def blend(canvas: Float, colour: Float, amount: Float) -> None:
    """Mix towards `colour` (broadcastable to the canvas) by `amount` (rows x columns)."""
    canvas += (colour - canvas) * amount[..., None]
