"""Finishing a strip: the vignette, film grain (which doubles as dither), and 8 bits."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipelines.builtin.generate.canvas import PixelGrid
from pipelines.builtin.imaging import Float


class Finishing:
    """Darkens the edges and adds grain; the grain's generator is consumed strip by strip."""

    def __init__(
        self,
        width_units: float,
        height_units: float,
        strength: float,
        grid: PixelGrid,
        grain: np.random.Generator,
    ) -> None:
        self.grain_rng = grain
        x = (grid.u / width_units - 0.5) * 2.0
        y = (grid.v / height_units - 0.5) * 2.0
        self.vignette_columns = (strength * 0.5 * x * x).astype(np.float32)
        self.vignette_rows = (strength * 0.5 * y * y).astype(np.float32)

    def apply(self, canvas: Float, start: int, stop: int) -> NDArray[np.uint8]:
        darkening = 1.0 - (self.vignette_rows[start:stop, None] + self.vignette_columns[None, :])
        grain = self.grain_rng.random(darkening.shape, dtype=np.float32)
        # Grain doubles as dither: it hides banding in smooth gradients.
        grain = (grain - 0.5) * 6.0 + 0.5
        canvas *= (darkening * 255.0)[..., None]
        canvas += grain[..., None]
        np.clip(canvas, 0.0, 255.0, out=canvas)
        return canvas.astype(np.uint8)
