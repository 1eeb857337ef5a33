"""The skylines of the ground layers, as heights (in units, down from the top) along the width:
mountains, hills, dunes and headlands shaped by noise, a forest's tree line, a city's roofs."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from pipelines.builtin.generate.noise import Noise1D, stretched
from pipelines.builtin.imaging import Float


class NoiseRidge:
    """A skyline of mountains, hills or dunes: `base` minus a noise-shaped height."""

    def __init__(
        self, rng: np.random.Generator, kind: str, base: float, amplitude: float, detail: int
    ) -> None:
        self.kind = kind
        self.base = base
        self.amplitude = amplitude
        cells, octaves = {"mountains": (1.6, detail + 3), "dunes": (1.1, 3)}.get(kind, (0.7, 4))
        self.shape = Noise1D(rng, cells, octaves)
        self.peaks = Noise1D(rng, cells * 0.6, max(2, detail))
        self.extent = Noise1D(rng, 0.35, 2)
        self.snow_edge = Noise1D(rng, 9.0, 5)
        self.partial = kind == "headland"

    def snow_bottom(self, u: Float, heights: Float, snow: float) -> Float:
        """Where the snow under the skyline ends: deeper under high peaks, ragged like gullies."""
        snowline = self.base - self.amplitude * (0.8 - 0.35 * snow)
        above = np.maximum(snowline - heights, 0.0)
        ragged = stretched(self.snow_edge(u, 0.6), 2.5)
        return (heights + above * (0.15 + 0.7 * ragged)).astype(np.float32)

    def heights(self, u: Float) -> Float:
        if self.kind == "mountains":
            ridged = 1.0 - np.abs(2.0 * self.peaks(u) - 1.0)
            shape = 0.45 * stretched(self.shape(u, 0.58)) + 0.7 * ridged**2
        elif self.kind == "dunes":
            # Folding the noise gives sharp crests between rounded troughs.
            shape = (1.0 - np.abs(2.0 * stretched(self.shape(u, 0.3), 1.6) - 1.0)) ** 1.3
        else:
            shape = stretched(self.shape(u, 0.45))
        if self.partial:
            shape = shape * np.clip(stretched(self.extent(u)) * 2.5 - 0.8, 0.0, 1.0)
        return (self.base - self.amplitude * shape).astype(np.float32)


class ForestRidge:
    """Rolling ground topped by a row of pines and round trees."""

    def __init__(self, rng: np.random.Generator, base: float, depth: float, width: float) -> None:
        self.ground = NoiseRidge(rng, "hills", base, 0.04 + 0.03 * depth, 3)
        size = 0.5 + 0.9 * depth
        half_widths: list[float] = []
        centres: list[float] = []
        position = -0.05
        while position < width + 0.05:
            half_width = rng.uniform(0.012, 0.022) * size
            centres.append(position)
            half_widths.append(half_width)
            position += half_width * rng.uniform(0.7, 1.3)
        count = len(centres)
        self.centres = np.array(centres, dtype=np.float32)
        self.half_widths = np.array(half_widths, dtype=np.float32)
        self.heights_above = (rng.uniform(0.045, 0.09, count) * size).astype(np.float32)
        self.round = rng.random(count) < 0.2

    def heights(self, u: Float) -> Float:
        crowns = np.zeros_like(u)
        starts = np.searchsorted(u, self.centres - self.half_widths)
        stops = np.searchsorted(u, self.centres + self.half_widths)
        for centre, half_width, height, is_round, start, stop in zip(
            self.centres,
            self.half_widths,
            self.heights_above,
            self.round,
            starts,
            stops,
            strict=True,
        ):
            if start == stop:
                continue
            d = np.abs(u[start:stop] - centre) / half_width
            if is_round:
                crown = height * 0.7 * np.sqrt(np.maximum(0.0, 1.0 - d * d))
            else:
                # Tiers of branches: the edge drops back a little every quarter of the width.
                crown = height * ((1.0 - d) - 0.12 * ((d * 4.0) % 1.0))
            np.maximum(crowns[start:stop], crown, out=crowns[start:stop])
        return self.ground.heights(u) - crowns


class CityRidge:
    """A row of buildings, some with antennas, with a grid of windows on each."""

    def __init__(self, rng: np.random.Generator, base: float, depth: float, width: float) -> None:
        size = 0.5 + 0.9 * depth
        edges = [-0.05]
        heights: list[float] = []
        while edges[-1] < width + 0.05:
            building_width = rng.uniform(0.025, 0.07) * size
            height = rng.lognormal(math.log(0.07), 0.45) * size
            if rng.random() < 0.12:
                height *= 1.8
            edges.append(edges[-1] + building_width)
            heights.append(height)
        self.base = base
        self.edges = np.array(edges, dtype=np.float32)
        self.building_heights = np.array(heights, dtype=np.float32)
        self.antennas = rng.random(len(heights)) < 0.1
        self.cell_width = 0.011 * size
        self.cell_height = 0.015 * size
        self.lit_table = rng.random((128, 512), dtype=np.float32)

    def heights(self, u: Float) -> Float:
        indices = np.clip(
            np.searchsorted(self.edges, u, side="right") - 1, 0, len(self.antennas) - 1
        )
        roof = self.base - self.building_heights[indices]
        left = self.edges[indices]
        right = self.edges[indices + 1]
        centre = (left + right) * 0.5
        antenna = self.antennas[indices] & (np.abs(u - centre) < 0.0015 + 0.001 * self.cell_width)
        return np.where(antenna, roof - 0.035, roof).astype(np.float32)

    def window_columns(self, u: Float) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
        """Which columns cross a window, and the window column's index into `lit_table`."""
        indices = np.clip(
            np.searchsorted(self.edges, u, side="right") - 1, 0, len(self.antennas) - 1
        )
        local = (u - self.edges[indices]) / self.cell_width
        span = (self.edges[indices + 1] - self.edges[indices]) / self.cell_width
        inside = (local % 1.0 > 0.3) & (local > 0.6) & (local < span - 0.6)
        cell = indices * 37 + np.floor(local).astype(np.int64)
        return inside, cell % self.lit_table.shape[1]


Ridge = NoiseRidge | ForestRidge | CityRidge
