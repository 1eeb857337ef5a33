"""Indoor and built places in the painter's flat style: a room, a kitchen, a brick wall, a street
and a table top, painted a strip of rows at a time like the landscapes (so memory stays at the
output image plus a few strip-sized planes), then finished with the same vignette and grain.

Each place is flat bands and repeated shapes (planks, tiles, bricks, facades) whose sizes are in
units of the image's shorter side, with per-shape shading from a seeded table, so a seed gives
the same place at any size. Its colours come from the palette: the time of day's light, the
prompt's colour for the place ("a blue room"), and a brand style's primary (walls, facades) and
accent (a rug, a picture, tiles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from pipelines.builtin.easing import smoothstep
from pipelines.builtin.generate.canvas import PixelGrid, as_colour, blend
from pipelines.builtin.generate.finishing import Finishing
from pipelines.builtin.generate.palette import Palette
from pipelines.builtin.imaging import Float
from pipelines.media.colours import RGB

STRIP_PIXELS = 1 << 18


@dataclass(frozen=True)
class Stage:
    """Where things stand in a place, as shares of the image's height: the line their feet
    touch, and the height of the largest thing standing there."""

    stand: float
    main_height: float
    floor: float  # where the back wall meets the floor or the counter top


STAGES = {
    "room": Stage(stand=0.88, main_height=0.5, floor=0.64),
    "kitchen": Stage(stand=0.66, main_height=0.34, floor=0.6),
    "brick wall": Stage(stand=0.9, main_height=0.5, floor=0.8),
    "street": Stage(stand=0.9, main_height=0.5, floor=0.66),
    "table": Stage(stand=0.8, main_height=0.4, floor=0.56),
}
# A landscape: the near ground, in front of its last layer.
LANDSCAPE_STAGE = Stage(stand=0.92, main_height=0.5, floor=0.7)

WALL = (0.93, 0.87, 0.78)
WOOD = (0.62, 0.42, 0.26)
BRICK = (0.64, 0.27, 0.2)
PAVEMENT = (0.6, 0.6, 0.62)
TILE = (0.88, 0.93, 0.92)
CABINET = (0.36, 0.5, 0.6)
ROAD = (0.24, 0.25, 0.28)
FACADES = ((0.78, 0.56, 0.44), (0.86, 0.78, 0.6), (0.6, 0.66, 0.72), (0.72, 0.5, 0.5))


@dataclass
class PlaceColours:
    wall: Float
    accent: Float
    light: Float  # the time of day's light on everything indoors and out
    sky: tuple[Float, Float]  # zenith and horizon seen through a window or above a street
    branded: bool  # the wall is a brand's or the prompt's colour, not the default


def place_colours(palette: Palette, place_colour: RGB | None, default_wall: RGB) -> PlaceColours:
    brand = palette.brand
    wall = brand[0] if brand and place_colour is None else as_colour(place_colour or default_wall)
    accent = brand[1] if len(brand) > 1 else as_colour((0.82, 0.36, 0.3))
    # Indoors the light is the day's, softened: night leaves a lamp's warm light.
    light = np.clip(0.45 + 0.55 * palette.land_light_level, 0.4, 1.0) * np.array(
        [1.0, 0.97, 0.92], np.float32
    )
    return PlaceColours(
        wall,
        accent,
        light.astype(np.float32),
        (palette.zenith, palette.horizon),
        bool(place_colour or brand),
    )


def _cells(values: Float, size: float, offset: Float | float = 0.0) -> tuple[Float, Float]:
    """Which cell of `size` each value falls in, and where in it (0 to 1)."""
    scaled = values / size + offset
    cell = np.floor(scaled)
    return cell, scaled - cell


def _jitter(cells: Float, seed: int, amount: float) -> Float:
    """A steady pseudo-random factor per cell index, 1 +- amount."""
    hashed = np.sin(cells * 12.9898 + seed * 78.233) * 43758.5453
    return (1.0 + amount * (2.0 * (hashed - np.floor(hashed)) - 1.0)).astype(np.float32)


class PlacePainter:
    """Paints one place at one pixel size, a strip of rows at a time."""

    def __init__(
        self,
        place: str,
        colours: PlaceColours,
        width: int,
        height: int,
        rng: np.random.Generator,
        grain: np.random.Generator,
        vignette: float,
    ) -> None:
        self.grid = PixelGrid.of(width, height)
        self.width, self.height = width, height
        self.colours = colours
        self.seed = int(rng.integers(0, 1 << 16))
        self.units_w = width / self.grid.scale
        self.units_h = height / self.grid.scale
        self.stage = STAGES[place]
        self.window = float(rng.uniform(0.1, 0.45)) * self.units_w
        self.facade_edges = np.cumsum(rng.uniform(0.22, 0.5, 64)).astype(np.float32) - 0.1
        self.facade_tops = rng.uniform(0.08, 0.34, 64).astype(np.float32)
        painters: dict[str, Callable[[Float, Float, Float], None]] = {
            "room": self._room,
            "kitchen": self._kitchen,
            "brick wall": self._brick_wall,
            "street": self._street,
            "table": self._table,
        }
        self._paint_rows = painters[place]
        self.finishing = Finishing(self.units_w, self.units_h, vignette, self.grid, grain)

    def paint(self, report: Callable[[float], None]) -> Image.Image:
        output = np.empty((self.height, self.width, 3), dtype=np.uint8)
        strip = max(1, STRIP_PIXELS // self.width)
        for start in range(0, self.height, strip):
            stop = min(self.height, start + strip)
            canvas = np.empty((stop - start, self.width, 3), dtype=np.float32)
            self._paint_rows(canvas, self.grid.v[start:stop], self.grid.u)
            canvas *= self.colours.light
            output[start:stop] = self.finishing.apply(canvas, start, stop)
            report(stop / self.height)
        return Image.fromarray(output, "RGB")

    # Each painter fills `canvas` (rows of `v`, columns of `u`, in units).

    def _wall(self, canvas: Float, v: Float, colour: Float) -> None:
        # Lighter near the top, as if lit from the ceiling.
        shade = (1.04 - 0.12 * np.clip(v / self.units_h, 0.0, 1.0))[:, None, None]
        canvas[:] = colour * shade

    def _rect(
        self,
        canvas: Float,
        v: Float,
        u: Float,
        box: tuple[float, float, float, float],
        colour: Float | NDArray[np.float32],
    ) -> None:
        left, top, right, bottom = box
        inside = ((v >= top) & (v < bottom))[:, None] & ((u >= left) & (u < right))[None, :]
        if inside.any():
            blend(canvas, colour, inside.astype(np.float32))

    def _window(self, canvas: Float, v: Float, u: Float, left: float, top: float) -> None:
        width, height = 0.42, 0.36
        frame = as_colour((0.96, 0.95, 0.92))
        self._rect(
            canvas,
            v,
            u,
            (left - 0.015, top - 0.015, left + width + 0.015, top + height + 0.03),
            frame,
        )
        zenith, horizon = self.colours.sky
        t = np.clip((v - top) / height, 0.0, 1.0)[:, None]
        sky = zenith + (horizon - zenith) * t
        inside = ((v >= top) & (v < top + height))[:, None] & ((u >= left) & (u < left + width))[
            None, :
        ]
        bars = (np.abs(u - (left + width / 2)) < 0.007)[None, :] | (
            np.abs(v - (top + height / 2)) < 0.007
        )[:, None]
        mask = (inside & ~bars).astype(np.float32)
        canvas += (np.broadcast_to(sky[:, None, :], canvas.shape) - canvas) * mask[..., None]

    def _room(self, canvas: Float, v: Float, u: Float) -> None:
        floor = self.stage.floor * self.units_h
        colours = self.colours
        self._wall(canvas, v, colours.wall)
        self._window(canvas, v, u, self.window, 0.1 * self.units_h)
        # A picture on the other side of the wall, in the accent colour.
        picture = self.window + 0.7 if self.window + 1.0 < self.units_w else self.window - 0.45
        top = 0.16 * self.units_h
        self._rect(
            canvas, v, u, (picture, top, picture + 0.26, top + 0.2), as_colour((0.22, 0.18, 0.16))
        )
        self._rect(
            canvas, v, u, (picture + 0.02, top + 0.02, picture + 0.24, top + 0.18), colours.accent
        )
        self._rect(
            canvas, v, u, (0.0, floor - 0.03, self.units_w, floor), as_colour((0.97, 0.96, 0.93))
        )
        self._floor(canvas, v, u, floor)
        # A rug under where things stand.
        centre_v = self.stage.stand * self.units_h - 0.02
        dx = (u - self.units_w / 2) / (0.42 * self.units_w)
        dy = (v - centre_v) / 0.1
        rug = (dy[:, None] ** 2 + dx[None, :] ** 2) < 1.0
        edge = (dy[:, None] ** 2 + dx[None, :] ** 2) > 0.8
        blend(canvas, colours.accent * 0.9, (rug & ~edge).astype(np.float32) * 0.85)
        blend(canvas, colours.accent * 0.6, (rug & edge).astype(np.float32) * 0.85)

    def _floor(self, canvas: Float, v: Float, u: Float, floor: float) -> None:
        below = v >= floor
        if not below.any():
            return
        rows, within = _cells(v[below] - floor, 0.045)
        plank_shift = _jitter(rows, self.seed, 0.5)
        columns, along = _cells(u[None, :], 0.6, plank_shift[:, None])
        tone = _jitter(columns * 31.0 + rows[:, None], self.seed + 1, 0.08)
        seam = (within[:, None] < 0.08) | (along < 0.01)
        wood = as_colour(WOOD) * tone[..., None]
        wood[seam] *= 0.72
        canvas[below] = wood

    def _kitchen(self, canvas: Float, v: Float, u: Float) -> None:
        counter = self.stage.floor * self.units_h
        colours = self.colours
        tile_colour = as_colour(TILE) if not self.colours.branded else colours.wall
        self._wall(canvas, v, tile_colour)
        _, tile_v = _cells(v, 0.09)
        _, tile_u = _cells(u, 0.09)
        grout = (tile_v < 0.07)[:, None] | (tile_u < 0.07)[None, :]
        above = (v < counter)[:, None] & grout
        blend(canvas, as_colour((0.75, 0.76, 0.74)), above.astype(np.float32))
        self._window(canvas, v, u, self.window, 0.08 * self.units_h)
        self._rect(
            canvas, v, u, (0.0, counter, self.units_w, counter + 0.07), as_colour((0.86, 0.84, 0.8))
        )
        self._rect(
            canvas,
            v,
            u,
            (0.0, counter + 0.07, self.units_w, counter + 0.085),
            as_colour((0.55, 0.53, 0.5)),
        )
        below = counter + 0.085
        _, along = _cells(u, 0.34)
        self._rect(
            canvas, v, u, (0.0, below, self.units_w, self.units_h + 1), colours.accent * 0.85
        )
        edge = ((along < 0.03) | (along > 0.97))[None, :] & (v > below)[:, None]
        blend(canvas, colours.accent * 0.6, edge.astype(np.float32))
        handle = (
            ((np.abs(along - 0.85) < 0.02)[None, :])
            & ((v > below + 0.05) & (v < below + 0.13))[:, None]
        )
        blend(canvas, as_colour((0.85, 0.85, 0.86)), handle.astype(np.float32))

    def _brick_wall(self, canvas: Float, v: Float, u: Float) -> None:
        ground = self.stage.floor * self.units_h
        colour = self.colours.wall
        rows, within = _cells(v, 0.06)
        offset = (rows % 2.0) * 0.5
        bricks, along = _cells(u[None, :], 0.17, offset[:, None])
        tone = _jitter(bricks * 17.0 + rows[:, None] * 5.0, self.seed, 0.1)
        mortar = (within[:, None] < 0.14) | (along < 0.05)
        wall = colour * tone[..., None]
        wall[mortar] = as_colour((0.8, 0.78, 0.74)) * (0.7 + 0.3 * float(colour.mean()))
        # Soft light from the upper left.
        light = (
            1.08
            - 0.18 * np.clip(v / self.units_h, 0, 1)[:, None]
            - 0.06 * (u / self.units_w)[None, :]
        )
        canvas[:] = wall * light[..., None]
        self._pavement(canvas, v, u, ground)

    def _pavement(self, canvas: Float, v: Float, u: Float, top: float) -> None:
        below = v >= top
        if not below.any():
            return
        _, within = _cells(v[below] - top, 0.12)
        _, along = _cells(u, 0.3)
        joint = (within[:, None] < 0.05) | (along[None, :] < 0.015)
        slab = np.broadcast_to(as_colour(PAVEMENT), (int(below.sum()), len(u), 3)).copy()
        slab *= (0.92 + 0.1 * smoothstep(top, self.units_h, v[below]))[:, None, None]
        slab[joint] *= 0.8
        canvas[below] = slab
        kerb = (v >= top) & (v < top + 0.012)
        canvas[kerb] *= 0.7

    def _street(self, canvas: Float, v: Float, u: Float) -> None:
        pavement = self.stage.floor * self.units_h
        road = pavement + 0.1
        zenith, horizon = self.colours.sky
        t = np.clip(v / pavement, 0, 1)[:, None]
        canvas[:] = (zenith + (horizon - zenith) * t)[:, None, :]
        index = np.clip(np.searchsorted(self.facade_edges, u), 0, len(self.facade_edges) - 1)
        tops = self.facade_tops[index] * self.units_h
        facade = np.array(FACADES, np.float32)[index % len(FACADES)]
        if self.colours.branded:
            facade[index % 3 == 0] = self.colours.wall
        building = (v[:, None] >= tops[None, :]) & (v < pavement)[:, None]
        canvas[building] = np.broadcast_to(facade[None], canvas.shape)[building]
        _, window_u = _cells(u, 0.09)
        _, window_v = _cells(v, 0.11)
        windows = building & (window_u > 0.35)[None, :] & (window_v > 0.3)[:, None]
        windows &= v[:, None] > tops[None, :] + 0.05
        canvas[windows] = np.array(self.colours.sky[1], np.float32) * 0.7
        self._pavement(canvas, v, u, pavement)
        asphalt = v >= road
        canvas[asphalt] = as_colour(ROAD)
        _, dash = _cells(u, 0.4)
        lane = (np.abs(v - (road + 0.5 * (self.units_h - road))) < 0.01)[:, None] & (dash < 0.5)[
            None, :
        ]
        canvas[lane] = as_colour((0.92, 0.9, 0.82))

    def _table(self, canvas: Float, v: Float, u: Float) -> None:
        top = self.stage.floor * self.units_h
        edge = 0.93 * self.units_h
        self._wall(canvas, v, self.colours.wall)
        self._window(canvas, v, u, self.window, 0.08 * self.units_h)
        surface = (v >= top) & (v < edge)
        if surface.any():
            grain = np.sin(
                u[None, :] * 3.0
                + np.sin(v[surface][:, None] * 40.0) * 0.8
                + v[surface][:, None] * 90.0
            )
            wood = as_colour(WOOD) * (1.05 + 0.04 * grain)[..., None]
            wood *= (0.85 + 0.2 * smoothstep(top, edge, v[surface]))[:, None, None]
            canvas[surface] = wood
        front = v >= edge
        canvas[front] = as_colour(WOOD) * 0.62
