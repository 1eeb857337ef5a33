"""Painting the sky: the gradient, the glow over the horizon, a nebula or the milky way, stars,
clouds, the sun or moon, a planet, and the haze at the horizon."""

from __future__ import annotations

import math

import numpy as np

from pipelines.builtin.easing import smoothstep
from pipelines.builtin.generate.canvas import WHITE, PixelGrid, as_colour, blend, screen
from pipelines.builtin.generate.layout import Light, Plan, Planet
from pipelines.builtin.generate.noise import NoiseField, stretched
from pipelines.builtin.generate.palette import Palette
from pipelines.builtin.imaging import Float


def sky_colours(plan: Plan, palette: Palette, v: Float) -> Float:
    """The gradient from zenith to horizon, one colour per row at `v` (in units)."""
    t = np.clip(v / plan.horizon, 0.0, 1.0) ** 1.25
    stops = np.array([0.0, 0.55, 1.0], dtype=np.float32)
    colours = np.stack([palette.zenith, palette.mid, palette.horizon])
    return np.stack(
        [np.interp(t, stops, colours[:, c]).astype(np.float32) for c in range(3)], axis=1
    )


class SkyPainter:
    """Paints the sky into each strip; row colours and column profiles are computed once."""

    def __init__(self, plan: Plan, palette: Palette, grid: PixelGrid, texture: NoiseField) -> None:
        self.plan, self.palette = plan, palette
        self.width, self.scale, self.u, self.v = grid.width, grid.scale, grid.u, grid.v
        self.texture = texture  # mottles the moon
        self.sky_rows = sky_colours(plan, palette, self.v)
        horizon = plan.horizon
        above = np.maximum(horizon - self.v, 0.0)
        self.fog_rows = (0.5 * palette.haze_amount * np.exp(-above / 0.05)).astype(np.float32)
        self.glow_rows = self.glow_columns = None
        if plan.light is not None and palette.horizon_glow > 0:
            self.glow_rows = (palette.horizon_glow * np.exp(-above / (0.18 * horizon))).astype(
                np.float32
            )
            spread = 0.45 * plan.width_units**0.5
            self.glow_columns = np.exp(-(((self.u - plan.light.u) / spread) ** 2)).astype(
                np.float32
            )
        if plan.clouds is not None:
            self.cloud_field = plan.clouds.field(self.u * 1.4, self.v * 4.0)
            t = self.v / horizon
            self.cloud_band = (smoothstep(0.02, 0.25, t) * (1.0 - smoothstep(0.8, 1.0, t))).astype(
                np.float32
            )
            lit = palette.cloud + (palette.light - palette.cloud) * 0.25
            self.cloud_rows = self.sky_rows + (lit - self.sky_rows) * 0.75
            self.cloud_threshold = 0.62 - 0.2 * min(palette.clouds, 1.5)
        if plan.nebula is not None:
            self.nebula_field = plan.nebula.field(self.u * 2.2, self.v * 2.2)
        if plan.milky_way is not None:
            angle, centre, width = plan.milky_way
            # Distance from the band's centre line, split into a column part and a row part.
            self.band_columns = ((self.u - centre) * (math.sin(angle) / width)).astype(np.float32)
            self.band_rows = ((self.v - 0.4 * horizon) * (math.cos(angle) / width)).astype(
                np.float32
            )
            self.band_fade = (0.6 * smoothstep(0.0, 0.3, horizon - self.v)).astype(np.float32)
        if plan.stars is not None:
            fade = smoothstep(0.0, 0.25, horizon - plan.stars.v)
            self.star_brightness = (
                plan.stars.brightness * fade * min(1.0, self.palette.stars)
            ).astype(np.float32)
            self.star_sigma_px = np.maximum(plan.stars.sigma * self.scale, 0.5).astype(np.float32)

    def paint(self, canvas: Float, start: int, stop: int) -> None:
        """The gradient over the whole strip, then what lies above the horizon."""
        canvas[:] = self.sky_rows[start:stop, None, :]
        if start >= self.plan.horizon * self.scale:
            return
        plan, palette = self.plan, self.palette
        if self.glow_rows is not None and self.glow_columns is not None:
            glow = self.glow_rows[start:stop, None] * self.glow_columns[None, :]
            screen(canvas, palette.light, glow)
        if plan.nebula is not None:
            self._paint_nebula(canvas, start, stop)
        if plan.stars is not None:
            self._paint_stars(canvas, start, stop)
        if plan.clouds is not None and self.cloud_band[start:stop].max() > 0:
            density = self.cloud_field.rows(start, stop)
            threshold = self.cloud_threshold
            cover = smoothstep(threshold, threshold + 0.22, density)
            cover *= self.cloud_band[start:stop, None] * min(1.0, 0.55 + 0.3 * palette.clouds)
            # Thick cores read as shaded undersides.
            shading = 1.05 - 0.3 * smoothstep(threshold + 0.12, threshold + 0.4, density)
            colour = self.cloud_rows[start:stop, None, :] * shading[..., None]
            canvas += (colour - canvas) * cover[..., None]
        if plan.light is not None:
            self._paint_light(canvas, start, stop, plan.light)
        if plan.planet is not None:
            self._paint_planet(canvas, start, stop, plan.planet)
        fog = self.fog_rows[start:stop]
        if fog.max() > 1e-3:
            canvas += (palette.haze - canvas) * fog[:, None, None]

    def _paint_nebula(self, canvas: Float, start: int, stop: int) -> None:
        density = self.nebula_field.rows(start, stop)
        palette = self.palette
        if self.plan.milky_way is not None:
            across = self.band_columns[None, :] - self.band_rows[start:stop, None]
            strength = np.exp(-(across**2)) * self.band_fade[start:stop, None]
        else:
            strength = np.full_like(density, 0.85)
        cloud = smoothstep(0.4, 0.75, density) * strength
        screen(canvas, palette.cloud, cloud)
        core = smoothstep(0.58, 0.85, density) * strength
        screen(canvas, np.clip(palette.mid * 2.5 + 0.15, 0, 1), core * 0.7)

    def _paint_stars(self, canvas: Float, start: int, stop: int) -> None:
        stars = self.plan.stars
        assert stars is not None
        sigma = self.star_sigma_px
        radius = np.ceil(3.0 * sigma).astype(np.int64)
        y = stars.v * self.scale
        chosen = (y + radius >= start) & (y - radius < stop) & (self.star_brightness > 0.01)
        plane = np.zeros(canvas.shape[:2], dtype=np.float32)
        for reach in np.unique(radius[chosen]):
            group = chosen & (radius == reach)
            offsets = np.arange(-reach, reach + 1)
            x = stars.u[group, None, None] * self.scale
            y_group = y[group, None, None]
            columns = np.floor(x).astype(np.int64) + offsets[None, None, :]
            rows = np.floor(y_group).astype(np.int64) + offsets[None, :, None]
            distance = (columns + 0.5 - x) ** 2 + (rows + 0.5 - y_group) ** 2
            weight = self.star_brightness[group, None, None] * np.exp(
                -distance / (2.0 * sigma[group, None, None] ** 2)
            )
            columns, rows, weight = np.broadcast_arrays(columns, rows, weight)
            keep = (rows >= start) & (rows < stop) & (columns >= 0) & (columns < self.width)
            np.add.at(plane, (rows[keep] - start, columns[keep]), weight[keep].astype(np.float32))
        if plane.any():
            screen(canvas, as_colour((0.92, 0.95, 1.0)), np.minimum(plane, 1.0))

    def _paint_light(self, canvas: Float, start: int, stop: int, light: Light) -> None:
        palette = self.palette
        dx2 = ((self.u - light.u) ** 2)[None, :]
        dy2 = ((self.v[start:stop] - light.v) ** 2)[:, None]
        distance2 = dx2 + dy2
        radius = light.radius
        glow_strength = palette.glow * (0.55 if light.kind == "sun" else 0.3)
        glow = glow_strength * np.exp(distance2 * (-1.0 / (2.0 * (3.0 * radius) ** 2)))
        glow += glow_strength * 0.5 / (1.0 + distance2 * (1.0 / (9.0 * radius) ** 2))
        screen(canvas, palette.light, glow)
        # The disc itself only touches a few rows and columns.
        row_lo = max(start, int((light.v - radius) * self.scale) - 1)
        row_hi = min(stop, int((light.v + radius) * self.scale) + 2)
        col_lo = max(0, int((light.u - radius) * self.scale) - 1)
        col_hi = min(self.width, int((light.u + radius) * self.scale) + 2)
        if row_lo >= row_hi or col_lo >= col_hi:
            return
        distance = np.sqrt(distance2[row_lo - start : row_hi - start, col_lo:col_hi])
        disc = np.clip((radius - distance) * self.scale + 0.5, 0.0, 1.0)
        if light.kind == "sun":
            face = palette.light + (WHITE - palette.light) * 0.7
            shading = np.ones_like(distance)
        else:
            face = palette.light + (WHITE - palette.light) * 0.3
            mottling = self.texture.rows(row_lo, row_hi)[:, col_lo:col_hi]
            shading = 0.82 + 0.25 * mottling - 0.12 * (distance / radius) ** 2
        region = canvas[row_lo - start : row_hi - start, col_lo:col_hi]
        # Never darker than the glow around it.
        face_colour = np.maximum(region, face[None, None, :] * shading[..., None])
        blend(region, face_colour, disc)

    def _paint_planet(self, canvas: Float, start: int, stop: int, planet: Planet) -> None:
        reach = planet.radius * 1.15
        row_lo = max(start, int((planet.v - reach) * self.scale))
        row_hi = min(stop, int((planet.v + reach) * self.scale) + 1)
        col_lo = max(0, int((planet.u - reach) * self.scale))
        col_hi = min(self.width, int((planet.u + reach) * self.scale) + 1)
        if row_lo >= row_hi or col_lo >= col_hi:
            return
        v = self.v[row_lo:row_hi]
        nx = ((self.u[col_lo:col_hi] - planet.u) / planet.radius)[None, :]
        ny = ((v - planet.v) / planet.radius)[:, None]
        distance2 = nx * nx + ny * ny
        nz = np.sqrt(np.maximum(0.0, 1.0 - distance2))
        light = self.plan.light
        if light is not None:
            to_light = np.array([light.u - planet.u, light.v - planet.v, planet.radius * 1.5])
        else:
            to_light = np.array([-1.0, -0.6, 0.8])
        lx, ly, lz = (float(c) for c in to_light / np.linalg.norm(to_light))
        lambert = np.clip(nx * lx + ny * ly + nz * lz, 0.0, 1.0)
        bands = stretched(planet.bands((v - planet.v) / planet.radius))[:, None, None]
        first, second = planet.colours
        surface = (first + (second - first) * bands) * (0.05 + 0.95 * lambert)[..., None]
        distance = np.sqrt(distance2)
        body = np.clip((1.0 - distance) * planet.radius * self.scale + 0.5, 0.0, 1.0)
        region = canvas[row_lo - start : row_hi - start, col_lo:col_hi]
        blend(region, surface, body)
        rim = np.exp(-np.abs(distance - 1.0) / 0.04) * (0.3 + 0.7 * lambert) * 0.8
        screen(region, np.clip(self.palette.horizon * 1.5 + 0.1, 0, 1), rim)
