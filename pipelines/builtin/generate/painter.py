"""Painting a plan at one pixel size, a strip of rows at a time (so memory stays at the output
image plus a few strip-sized planes): sky, then terrain, then water, then finishing."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from pipelines.builtin.generate.canvas import PixelGrid
from pipelines.builtin.generate.finishing import Finishing
from pipelines.builtin.generate.layout import Plan
from pipelines.builtin.generate.palette import Palette
from pipelines.builtin.generate.sky import SkyPainter
from pipelines.builtin.generate.terrain import TerrainPainter
from pipelines.builtin.generate.water import WaterPainter

# Pixels per painted strip: large enough to amortise Python overhead, small enough for the cache.
STRIP_PIXELS = 1 << 18
REPORTS_PER_IMAGE = 6


class Painter:
    """Paints a plan at one pixel size, a strip of rows at a time."""

    def __init__(
        self, plan: Plan, palette: Palette, width: int, height: int, grain: np.random.Generator
    ) -> None:
        self.width, self.height = width, height
        grid = PixelGrid.of(width, height)
        texture = plan.texture.field(grid.u * 9.0, grid.v * 9.0)
        # Row colour tables and per-column profiles are computed once; strips only combine them.
        self.sky = SkyPainter(plan, palette, grid, texture)
        self.terrain = TerrainPainter(plan, palette, grid, texture)
        self.water = None if plan.water is None else WaterPainter(plan, palette, grid, plan.water)
        self.finishing = Finishing(
            plan.width_units, plan.height_units, palette.vignette, grid, grain
        )
        self.horizon_row = plan.horizon * grid.scale

    def paint(self, report: Callable[[float], None]) -> Image.Image:
        output = np.empty((self.height, self.width, 3), dtype=np.uint8)
        # Small images still get several strips, so progress is reported several times.
        strip = max(1, min(STRIP_PIXELS // self.width, math.ceil(self.height / REPORTS_PER_IMAGE)))
        for start in range(0, self.height, strip):
            stop = min(self.height, start + strip)
            output[start:stop] = self._strip(start, stop)
            report(stop / self.height)
        return Image.fromarray(output, "RGB")

    def _strip(self, start: int, stop: int) -> NDArray[np.uint8]:
        canvas = np.empty((stop - start, self.width, 3), dtype=np.float32)
        self.sky.paint(canvas, start, stop)
        self.terrain.paint(canvas, start, stop)
        if self.water is not None and stop > self.horizon_row:
            self.water.paint(canvas, start, stop)
        return self.finishing.apply(canvas, start, stop)
