"""Ambient effects a prompt can ask of an animated still: particles, flicker, water, clouds.

Everything here works on the frame being composed (8-bit RGB at output size) and is a pure
function of time, so any frame can be drawn without the ones before it. Effects touch only the
rows they cover, and particles are stamped from small precomputed sprites, so their cost is the
pixels they cover, not the frame's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

# OpenCV's stubs type every result as a generic array, so these aliases document intent only.
Float = NDArray[Any]  # float32 planes and images
Frame = NDArray[Any]  # 8-bit RGB frames

SUBPIXEL_STEPS = 4  # sprite phases per pixel, so slow particles glide instead of stepping
ROTATION_STEPS = 12  # sprite angles of tumbling petals


@dataclass(frozen=True)
class ParticleKind:
    count_per_megapixel: float
    size: tuple[float, float]  # sprite radius range, in fractions of the frame's short side
    velocity: tuple[float, float]  # mean (x, y) speed, frame short sides per second
    spread: float  # random part of the speed
    wobble: float  # sideways sway amplitude, short sides
    colour: tuple[float, float, float]
    opacity: float
    glow: bool = False  # light: added rather than painted over
    blink: float = 0.0  # 0 steady, 1 pulses fully on and off
    streak: float = 0.0  # length of a motion streak, in radii (rain)
    tumble: bool = False  # flat and turning (petals)


PARTICLES: dict[str, ParticleKind] = {
    "snow": ParticleKind(260, (0.0016, 0.0045), (0.015, 0.07), 0.025, 0.012,
                         (245, 248, 255), 0.85),
    "rain": ParticleKind(420, (0.0009, 0.0016), (-0.12, 1.3), 0.15, 0.0,
                         (205, 215, 230), 0.35, streak=14.0),
    "embers": ParticleKind(90, (0.0012, 0.003), (0.01, -0.09), 0.04, 0.015,
                           (255, 140, 45), 0.9, glow=True, blink=0.6),
    "fireflies": ParticleKind(45, (0.0025, 0.005), (0.0, -0.004), 0.02, 0.02,
                              (205, 255, 120), 0.9, glow=True, blink=1.0),
    "dust": ParticleKind(160, (0.0008, 0.002), (0.006, -0.004), 0.008, 0.006,
                         (255, 242, 215), 0.45, glow=True, blink=0.3),
    "petals": ParticleKind(55, (0.004, 0.007), (0.04, 0.06), 0.02, 0.02,
                           (250, 185, 200), 0.9, tumble=True),
}  # fmt: skip
AUTUMN_LEAF = (215, 120, 45)


def _sprite(
    radius: float, phase_x: float, phase_y: float, kind: ParticleKind, angle: float
) -> Float:
    """Coverage in [0, 1] of one particle drawn at a subpixel offset, on a small square."""
    reach = math.ceil(radius * (kind.streak + 2.5 if kind.streak else 2.5)) + 1
    coordinates = np.arange(-reach, reach + 1, dtype=np.float32)
    x = coordinates[None, :] - phase_x
    y = coordinates[:, None] - phase_y
    if kind.streak:
        along = np.clip(y, -radius * kind.streak, radius * kind.streak)
        distance2 = (x - along * 0.08) ** 2 + (y - along) ** 2
        return np.exp(-distance2 / (2 * (radius * 0.8) ** 2)).astype(np.float32)
    if kind.tumble:
        cos, sin = math.cos(angle), math.sin(angle)
        u, v = x * cos + y * sin, -x * sin + y * cos
        distance2 = u**2 + (v * 2.2) ** 2  # an ellipse flattened as it turns
        return np.clip(radius - np.sqrt(distance2) + 0.5, 0.0, 1.0).astype(np.float32)
    distance2 = x**2 + y**2
    core = np.exp(-distance2 / (2 * (radius * 0.6) ** 2))
    if kind.glow:
        core = core + 0.35 * np.exp(-distance2 / (2 * (radius * 1.8) ** 2))
    return np.clip(core, 0.0, 1.0).astype(np.float32)


class Particles:
    """One kind of particle over the whole clip; positions are closed-form in time.

    `autumn` turns petals into falling leaves.
    """

    def __init__(
        self, name: str, width: int, height: int, rng: np.random.Generator, autumn: bool = False
    ) -> None:
        kind = PARTICLES[name]
        self.kind = kind
        self.width, self.height = width, height
        short = min(width, height)
        count = max(8, round(kind.count_per_megapixel * width * height / 1e6))
        self.depth = rng.uniform(0.3, 1.0, count).astype(np.float32)  # 1 nearest
        low, high = kind.size
        self.radius_px = np.maximum(0.6, (low + (high - low) * self.depth) * short)
        speed_scale = short * (0.4 + 0.6 * self.depth)
        self.velocity_x = (kind.velocity[0] + rng.normal(0, kind.spread, count)) * speed_scale
        self.velocity_y = (kind.velocity[1] + rng.normal(0, kind.spread, count)) * speed_scale
        self.start_x = rng.uniform(0, width, count)
        self.start_y = rng.uniform(0, height, count)
        self.wobble_px = kind.wobble * short * self.depth
        self.wobble_rate = rng.uniform(0.3, 1.0, count) * 2 * math.pi
        self.phase = rng.uniform(0, 2 * math.pi, count)
        self.blink_rate = rng.uniform(0.4, 1.2, count) * 2 * math.pi
        self.spin_rate = rng.uniform(-1.5, 1.5, count)
        leaves = autumn and kind.tumble
        self.colour = np.asarray(AUTUMN_LEAF if leaves else kind.colour, dtype=np.float32)
        self.colours = self.colour[None, :] * rng.uniform(0.85, 1.0, (count, 1)).astype(np.float32)
        self._sprites: dict[tuple[int, int, int, int], Float] = {}

    def _sprite_for(self, radius: float, frac_x: float, frac_y: float, angle: float) -> Float:
        size_key = round(radius * 4)
        phase_x = round(frac_x * SUBPIXEL_STEPS) % SUBPIXEL_STEPS
        phase_y = round(frac_y * SUBPIXEL_STEPS) % SUBPIXEL_STEPS
        turn = round(angle / math.pi * ROTATION_STEPS) % ROTATION_STEPS if self.kind.tumble else 0
        key = (size_key, phase_x, phase_y, turn)
        sprite = self._sprites.get(key)
        if sprite is None:
            sprite = _sprite(
                size_key / 4,
                phase_x / SUBPIXEL_STEPS,
                phase_y / SUBPIXEL_STEPS,
                self.kind,
                turn * math.pi / ROTATION_STEPS,
            )
            self._sprites[key] = sprite
        return sprite

    def draw(self, canvas: Float, seconds: float, scale: float, shift: tuple[float, float]) -> None:
        """Stamp every particle; `scale` and `shift` are the nearest layer's camera motion."""
        kind = self.kind
        margin = 0.1 * min(self.width, self.height)
        span_x, span_y = self.width + 2 * margin, self.height + 2 * margin
        sway = self.wobble_px * np.sin(self.wobble_rate * seconds + self.phase)
        x = (self.start_x + self.velocity_x * seconds + sway + margin) % span_x - margin
        y = (self.start_y + self.velocity_y * seconds + margin) % span_y - margin
        # Nearer particles follow the camera more, like the layers do.
        zoom = 1.0 + (scale - 1.0) * self.depth
        x = self.width / 2 + (x - self.width / 2) * zoom + shift[0] * self.depth
        y = self.height / 2 + (y - self.height / 2) * zoom + shift[1] * self.depth
        opacity = kind.opacity * (0.55 + 0.45 * self.depth)
        if kind.blink:
            pulse = 0.5 + 0.5 * np.sin(self.blink_rate * seconds + self.phase)
            opacity = opacity * (1.0 - kind.blink + kind.blink * pulse)
        angles = self.phase + self.spin_rate * seconds
        for index in range(len(x)):
            self._stamp(canvas, index, float(x[index]), float(y[index]), float(opacity[index]),
                        float(angles[index]), zoom[index])  # fmt: skip

    def _stamp(
        self, canvas: Frame, index: int, x: float, y: float, opacity: float, angle: float,
        zoom: float,
    ) -> None:  # fmt: skip
        sprite = self._sprite_for(
            float(self.radius_px[index] * zoom), x - math.floor(x), y - math.floor(y), angle
        )
        reach = sprite.shape[0] // 2
        left, top = math.floor(x) - reach, math.floor(y) - reach
        x0, y0 = max(left, 0), max(top, 0)
        x1 = min(left + sprite.shape[1], canvas.shape[1])
        y1 = min(top + sprite.shape[0], canvas.shape[0])
        if x0 >= x1 or y0 >= y1:
            return
        coverage = sprite[y0 - top : y1 - top, x0 - left : x1 - left, None] * opacity
        region = canvas[y0:y1, x0:x1].astype(np.float32)
        colour = self.colours[index]
        if self.kind.glow:
            region += (colour - region * 0.5) * coverage  # light adds; the bright stays bright
        else:
            region += (colour - region) * coverage
        canvas[y0:y1, x0:x1] = np.clip(region + 0.5, 0.0, 255.0)


def flicker_gain(seconds: float, seed: int) -> float:
    """A firelight flicker: a few incommensurate waves, so it never visibly repeats."""
    rng = np.random.default_rng([seed, 7])
    rates = np.array([1.3, 2.9, 6.1, 11.7]) * rng.uniform(0.9, 1.1, 4)
    phases = rng.uniform(0, 2 * math.pi, 4)
    weights = np.array([0.45, 0.3, 0.17, 0.08])
    wave = float(np.sum(weights * np.sin(rates * 2 * math.pi * seconds + phases)))
    return 1.0 + 0.09 * wave


def flickered(canvas: Frame, gain: float) -> Frame:
    """Brighter values (light sources and what they light) flicker most, warm-tinted.

    A per-channel lookup table, so the whole frame costs one table pass.
    """
    values = np.arange(256, dtype=np.float32)[:, None]
    tint = np.array([[1.0, 0.9, 0.75]], dtype=np.float32)
    table = values * (1.0 + (gain - 1.0) * (values / 255.0) * tint)
    lut = np.clip(table + 0.5, 0, 255).astype(np.uint8).reshape(256, 1, 3)
    result: Frame = cv2.LUT(canvas, lut)
    return result


def rows_covered(mask: NDArray[Any], threshold: float = 0.0) -> tuple[int, int]:
    """The first and past-the-last rows where `mask` exceeds `threshold` (equal when none)."""
    rows = np.flatnonzero((mask > threshold).any(axis=1))
    if rows.size == 0:
        return 0, 0
    return int(rows[0]), int(rows[-1]) + 1


class WaterShimmer:
    """Ripples: rows of water sway sideways and a little up and down, stronger near the viewer."""

    def __init__(self, width: int, height: int, seed: int) -> None:
        rng = np.random.default_rng([seed, 11])
        rows = np.arange(height, dtype=np.float32)
        columns = np.arange(width, dtype=np.float32)
        self.grid_x, self.grid_y = np.meshgrid(columns, rows)
        nearness = (rows / height) ** 1.5  # lower rows are nearer: bigger, slower waves
        self.amplitude = (0.4 + 2.6 * nearness) * height / 720.0
        self.wavelength = (6.0 + 40.0 * nearness) * height / 720.0
        self.phase = float(rng.uniform(0, 2 * math.pi))
        self.across = columns / max(width, 1) * 2 * math.pi * 3.0

    def apply(self, canvas: Frame, water: Float, seconds: float) -> None:
        """Ripple `canvas` in place where `water` (0 to 1, frame-sized) says there is water."""
        top, bottom = rows_covered(water, 0.01)
        if top >= bottom:
            return
        rows = self.grid_y[top:bottom, 0]
        rows_phase = rows / self.wavelength[top:bottom] * 2 * math.pi - seconds * 2.2 + self.phase
        amplitude = self.amplitude[top:bottom]
        sway = (amplitude * np.sin(rows_phase))[:, None] * np.cos(
            self.across[None, :] * 0.5 + seconds * 0.7
        )
        bob = (amplitude * 0.35 * np.cos(rows_phase * 1.3))[:, None]
        band = water[top:bottom]
        map_x = self.grid_x[top:bottom] + (sway * band).astype(np.float32)
        map_y = self.grid_y[top:bottom] + (bob * band).astype(np.float32)
        canvas[top:bottom] = cv2.remap(
            canvas, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
