"""Fractal value noise along a line and on a plane: the shapes of ridges, clouds, nebulae, water
and texture."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipelines.builtin.imaging import Float

NOISE_PERIOD_1D = 256
NOISE_PERIOD_2D = 32  # grids wrap around; per-octave offsets hide the repeat


class Noise1D:
    """Fractal value noise along one axis, roughly in [0, 1]."""

    def __init__(self, rng: np.random.Generator, cells_per_unit: float, octaves: int) -> None:
        self.cells_per_unit = cells_per_unit
        self.grids = rng.random((octaves, NOISE_PERIOD_1D), dtype=np.float32)
        self.offsets = rng.random(octaves) * NOISE_PERIOD_1D

    def __call__(self, position: Float, persistence: float = 0.5) -> Float:
        total = np.zeros_like(position)
        norm = 0.0
        amplitude, frequency = 1.0, self.cells_per_unit
        for grid, offset in zip(self.grids, self.offsets, strict=True):
            x = position * frequency + offset
            cell = np.floor(x)
            t = x - cell
            t = t * t * (3.0 - 2.0 * t)
            index = cell.astype(np.int64) % NOISE_PERIOD_1D
            left, right = grid[index], grid[(index + 1) % NOISE_PERIOD_1D]
            total += amplitude * (left + (right - left) * t)
            norm += amplitude
            amplitude *= persistence
            frequency *= 2.0
        return (total / norm).astype(np.float32)


class Noise2D:
    """Fractal value noise on a plane; `field` binds it to an image's pixel grid."""

    def __init__(self, rng: np.random.Generator, octaves: int, persistence: float = 0.5) -> None:
        self.grids = rng.random((octaves, NOISE_PERIOD_2D, NOISE_PERIOD_2D), dtype=np.float32)
        self.offsets = rng.random((octaves, 2)) * NOISE_PERIOD_2D
        self.persistence = persistence

    def field(self, columns: Float, rows: Float) -> NoiseField:
        return NoiseField(self, columns, rows)


class NoiseField:
    """Noise sampled at given column and row coordinates, produced a strip of rows at a time.

    Interpolating along x once per octave up front leaves two row gathers and a blend per strip.
    """

    def __init__(self, noise: Noise2D, columns: Float, rows: Float) -> None:
        amplitudes = noise.persistence ** np.arange(len(noise.grids))
        amplitudes /= amplitudes.sum()
        self.octaves: list[tuple[Float, NDArray[np.int64], NDArray[np.int64], Float]] = []
        for octave, (grid, (dx, dy)) in enumerate(zip(noise.grids, noise.offsets, strict=True)):
            scale = 2.0**octave
            x_cells, x_t = self._cells(columns * scale + dx)
            along_x = (
                grid[:, x_cells] * (1.0 - x_t) + grid[:, (x_cells + 1) % NOISE_PERIOD_2D] * x_t
            )
            y_cells, y_t = self._cells(rows * scale + dy)
            along_x *= np.float32(amplitudes[octave])
            self.octaves.append(
                (along_x, y_cells, (y_cells + 1) % NOISE_PERIOD_2D, y_t[:, None].copy())
            )

    @staticmethod
    def _cells(x: Float) -> tuple[NDArray[np.int64], Float]:
        cell = np.floor(x)
        t = (x - cell).astype(np.float32)
        return cell.astype(np.int64) % NOISE_PERIOD_2D, t * t * (3.0 - 2.0 * t)

    def rows(self, start: int, stop: int) -> Float:
        total: Float | None = None
        for along_x, top, bottom, t in self.octaves:
            upper = along_x[top[start:stop]]
            blended = upper + (along_x[bottom[start:stop]] - upper) * t[start:stop]
            total = blended if total is None else total + blended
        assert total is not None
        return total


def stretched(noise: Float, contrast: float = 2.2) -> Float:
    # Summed octaves huddle around 0.5; spread them back over [0, 1].
    return np.clip((noise - 0.5) * contrast + 0.5, 0.0, 1.0)
