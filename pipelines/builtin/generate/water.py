"""Painting water below the horizon: the sky mirrored and deepening towards the viewer, waves,
and the sun's or moon's path of light across them."""

from __future__ import annotations

import numpy as np

from pipelines.builtin.easing import smoothstep
from pipelines.builtin.generate.canvas import PixelGrid, screen
from pipelines.builtin.generate.layout import Plan
from pipelines.builtin.generate.noise import Noise2D
from pipelines.builtin.generate.palette import Palette
from pipelines.builtin.generate.sky import sky_colours
from pipelines.builtin.imaging import Float


class WaterPainter:
    """Paints the water into each strip that reaches below the horizon."""

    def __init__(self, plan: Plan, palette: Palette, grid: PixelGrid, water: Noise2D) -> None:
        self.plan, self.palette = plan, palette
        self.scale, self.u, self.v = grid.scale, grid.u, grid.v
        below = np.maximum(self.v - plan.horizon, 0.0)
        depth = below / max(plan.height_units - plan.horizon, 1e-3)
        mirrored = sky_colours(plan, palette, plan.horizon - below * 1.4)
        deep = palette.water
        mix = (smoothstep(0.0, 1.0, depth) * 0.75)[:, None]
        self.water_rows = (mirrored * 0.9 + (deep - mirrored * 0.9) * mix).astype(np.float32)
        self.water_field = water.field(self.u * 3.0, 16.0 / (depth + 0.04))
        self.wave_rows = (0.22 * palette.waves * smoothstep(0.0, 0.25, depth)).astype(np.float32)
        self.water_depth = depth.astype(np.float32)

    def paint(self, canvas: Float, start: int, stop: int) -> None:
        first = max(start, int(self.plan.horizon * self.scale))
        if first >= stop:
            return
        region = canvas[first - start :]
        waves = self.water_field.rows(first, stop)
        ripple = 1.0 + (waves - 0.5) * 2.0 * self.wave_rows[first:stop, None]
        region[:] = self.water_rows[first:stop, None, :] * ripple[..., None]
        light = self.plan.light
        if light is None:
            return
        depth = self.water_depth[first:stop]
        spread = light.radius * 1.5 + 0.35 * depth
        path = np.exp(-(((self.u - light.u) ** 2)[None, :] / (spread**2)[:, None]))
        sparkle = smoothstep(0.45, 0.7, waves)
        strength = (0.9 if light.kind == "sun" else 0.6) * max(
            0.3, 1.0 - self.palette.light_elevation
        )
        screen(region, self.palette.light, path * sparkle * strength * self.palette.glow)
