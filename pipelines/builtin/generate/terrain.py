"""Painting the ground layers, far to near: each below its skyline, misty at its foot, with
slopes shaded towards the light, snow, light caught along the ridge and lit windows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from pipelines.builtin.easing import smoothstep
from pipelines.builtin.generate.canvas import WHITE, PixelGrid, blend, screen
from pipelines.builtin.generate.layout import Layer, Plan
from pipelines.builtin.generate.noise import NoiseField
from pipelines.builtin.generate.palette import Palette
from pipelines.builtin.generate.ridges import CityRidge, NoiseRidge
from pipelines.builtin.imaging import Float, luma


@dataclass
class Windows:
    inside: NDArray[np.bool_]  # columns that cross a window
    cells: NDArray[np.int64]  # each column's index into the city's `lit_table`
    city: CityRidge


@dataclass
class PaintedLayer:
    """A layer bound to the pixel grid: its skyline in pixels and its colour per row."""

    layer: Layer
    ridge_px: Float
    top_row: int
    rows: Float
    shade: Float | None = None
    snow_px: Float | None = None
    snow_colour: Float = field(default_factory=lambda: WHITE)
    windows: Windows | None = None


class TerrainPainter:
    """Binds each layer to the pixel grid once, then paints the layers into each strip."""

    def __init__(self, plan: Plan, palette: Palette, grid: PixelGrid, texture: NoiseField) -> None:
        self.plan, self.palette = plan, palette
        self.width, self.scale, self.u, self.v = grid.width, grid.scale, grid.u, grid.v
        self.texture = texture
        self.layers: list[PaintedLayer] = []
        light = self.plan.light
        for layer in self.plan.layers:
            heights = layer.ridge.heights(self.u)
            ridge_px = heights * self.scale - 1.0
            top_row = max(0, int(np.floor(ridge_px.min())))
            painted = PaintedLayer(
                layer=layer,
                ridge_px=ridge_px,
                top_row=top_row,
                rows=self._layer_rows(layer, float(heights.min()), self.v[top_row:]),
            )
            if layer.shade > 0 and self.width > 1:
                # Broad slopes only: per-pixel slopes would streak the whole face.
                slope = np.gradient(_box_blur(heights, 0.04 * self.scale), self.u)
                # Which way faces the light, easing through zero under it to avoid a seam.
                side = np.clip((self.u - light.u) / 0.2, -1.0, 1.0) if light else 1.0
                painted.shade = (layer.shade * np.clip(-slope * side * 2.0, -0.6, 1.0)).astype(
                    np.float32
                )
            if layer.snow > 0 and isinstance(layer.ridge, NoiseRidge):
                bottom = layer.ridge.snow_bottom(self.u, heights, layer.snow)
                painted.snow_px = bottom * self.scale
                brightness = min(1.0, 0.25 + 3.0 * float(luma(layer.colour)))
                snow = (self.palette.light * 0.7 + self.palette.haze * 0.3 + 0.15) * brightness
                # Far snow fades into the haze like the rock around it.
                distance_haze = self.palette.haze_amount * (1.0 - layer.depth) ** 1.5
                snow = snow + (self.palette.haze - snow) * distance_haze
                painted.snow_colour = np.clip(snow, 0.0, 1.0)
            if isinstance(layer.ridge, CityRidge) and layer.windows_lit >= 0:
                inside, cells = layer.ridge.window_columns(self.u)
                painted.windows = Windows(inside, cells, layer.ridge)
            self.layers.append(painted)

    def _layer_rows(self, layer: Layer, top: float, v: Float) -> Float:
        """The layer's colour for each row below its highest point, misty or dark at its foot."""
        palette = self.palette
        colour = np.broadcast_to(layer.colour, (len(v), 3)).copy()
        if layer.depth < 1.0:
            mist = smoothstep(top, max(layer.foot, top + 1e-3), v) * layer.mist
            colour += (palette.haze - colour) * mist[:, None]
        else:
            colour *= (1.0 - 0.35 * smoothstep(top, self.plan.height_units, v))[:, None]
        return colour.astype(np.float32)

    def paint(self, canvas: Float, start: int, stop: int) -> None:
        texture = self.texture.rows(start, stop)
        for painted in self.layers:
            self._paint_layer(canvas, start, stop, texture, painted)

    def _paint_layer(
        self, canvas: Float, start: int, stop: int, texture: Float, painted: PaintedLayer
    ) -> None:
        first = max(start, painted.top_row)
        if first >= stop:
            return
        layer = painted.layer
        region = canvas[first - start :]
        row_index = np.arange(first, stop, dtype=np.float32)[:, None]
        below_ridge = row_index - painted.ridge_px[None, :]
        alpha = np.clip(below_ridge, 0.0, 1.0)
        factor = 1.0 + layer.texture * (texture[first - start :] - 0.5) * 2.0
        if painted.shade is not None:
            under = np.maximum(below_ridge, 0.0)  # above the skyline it is sky anyway
            factor += np.exp(under * (-1.0 / (0.1 * self.scale))) * painted.shade[None, :]
        top = first - painted.top_row
        colour = painted.rows[top : top + stop - first, None, :] * factor[..., None]
        if painted.snow_px is not None:
            cover = np.clip((painted.snow_px[None, :] - row_index) * 0.5, 0.0, 1.0) * layer.snow
            blend(colour, painted.snow_colour * factor[..., None], cover)
        if layer.rim > 0:
            rim = np.clip(1.0 - below_ridge * (1.0 / max(1.0, 0.0015 * self.scale)), 0.0, 1.0)
            screen(colour, self.palette.light, rim * layer.rim)
        if painted.windows is not None:
            self._paint_windows(colour, first, stop, below_ridge, layer, painted.windows)
        blend(region, colour, alpha)

    def _paint_windows(
        self,
        colour: Float,
        start: int,
        stop: int,
        below_ridge: Float,
        layer: Layer,
        windows: Windows,
    ) -> None:
        city = windows.city
        v = self.v[start:stop]
        row_phase = v / city.cell_height
        window_rows = (row_phase % 1.0) < 0.55
        mask = (
            window_rows[:, None]
            & windows.inside[None, :]
            & (below_ridge > city.cell_height * self.scale)
        )
        if not mask.any():
            return
        table = city.lit_table
        table_rows = np.floor(row_phase).astype(np.int64) % table.shape[0]
        chance = table[table_rows[:, None], windows.cells[None, :]]
        if layer.windows_lit > 0:
            lit = mask & (chance < layer.windows_lit)
            accents = np.stack(self.palette.accents)
            choice = (chance[lit] / layer.windows_lit * len(accents)).astype(np.int64)
            brightness = 0.65 + 0.35 * (chance[lit] / layer.windows_lit)
            colour[lit] = accents[np.minimum(choice, len(accents) - 1)] * brightness[:, None]
        else:
            # By day the glass reflects the sky.
            colour[mask] = colour[mask] * 0.8 + self.palette.horizon * 0.2


def _box_blur(values: Float, width: float) -> Float:
    """A running mean over about `width` samples, edges held."""
    half = int(width // 2)
    if half < 1:
        return values
    padded = np.pad(values, (half + 1, half), mode="edge")
    sums = np.cumsum(padded, dtype=np.float64)
    return ((sums[2 * half + 1 :] - sums[: -2 * half - 1]) / (2 * half + 1)).astype(np.float32)
