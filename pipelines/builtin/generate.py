"""The builtin text-to-image pipeline: a procedural landscape painter on NumPy and Pillow.

It reads colours, moods, times of day and scenes from the prompt (`vocabulary.py`), turns them into
a palette and a layout, and paints: a gradient sky with clouds, stars and a sun or moon, layered
silhouettes of mountains, hills, forest, dunes or city blocks fading into haze, water with a light
path, grain and a vignette.

Layouts are planned in units of the image's shorter side, so a seed gives the same picture at any
size; painting goes in horizontal strips, so memory stays at the output image plus a few
strip-sized float32 planes however large the image.
"""

from __future__ import annotations

import colorsys
import hashlib
import logging
import math
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from pipelines.base import GenerateInput, ImageOutput, JobControl, StyleHints
from pipelines.builtin import painting_styles
from pipelines.builtin import vocabulary as vocab
from pipelines.builtin.imaging import log_peak_memory, to_array, to_image
from pipelines.media.colours import COLOURS, RGB, parse_hex_colour

log = logging.getLogger(__name__)

# float32 at run time; NumPy's stubs widen float32-with-Python-float arithmetic to float64.
Float = NDArray[np.floating[Any]]

# The worker reports "storing" at 0.95 once we return, so painting reports stay below that.
PROGRESS_SHARE = 0.9
# Pixels per painted strip: large enough to amortise Python overhead, small enough for the cache.
STRIP_PIXELS = 1 << 18
REPORTS_PER_IMAGE = 6

LUMA = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)
WHITE = np.ones(3, dtype=np.float32)
WINDOW_LIGHTS = ((1.0, 0.8, 0.45), (1.0, 0.9, 0.65), (0.95, 0.68, 0.38))
NEON_ACCENTS = ((0.95, 0.15, 0.75), (0.1, 0.85, 0.95))
GROUND_SCENES = ("mountains", "hills", "desert", "forest", "city")  # far to near
LAYER_KINDS = {
    "mountains": "mountains",
    "hills": "hills",
    "desert": "dunes",
    "forest": "forest",
    "city": "city",
}
FAR_COMPANION = {
    "mountains": "mountains",
    "hills": "hills",
    "dunes": "mountains",
    "forest": "hills",
    "city": "city",
}


@dataclass(frozen=True)
class QualitySettings:
    render_scale: float  # below 1 paints smaller and upscales with Lanczos
    octaves: int  # fractal detail of clouds, nebulae, water and ridges
    extra_layers: int


QUALITIES = {
    "low": QualitySettings(render_scale=0.5, octaves=3, extra_layers=0),
    "medium": QualitySettings(render_scale=1.0, octaves=5, extra_layers=0),
    "high": QualitySettings(render_scale=1.0, octaves=7, extra_layers=1),
}


def stable_int(*parts: object) -> int:
    """A 64-bit hash that, unlike `hash()`, is the same in every process."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _rng(root: int, part: str) -> np.random.Generator:
    # One stream per part of the layout, so detail settings never shift what another part draws.
    return np.random.default_rng([root, zlib.crc32(part.encode())])


def _colour(rgb: Sequence[float]) -> Float:
    return np.asarray(rgb, dtype=np.float32)


def _smoothstep(edge0: float, edge1: float, x: Float) -> Float:
    t = np.clip((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


# --- prompt -------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z]+")


def _lookup(word: str, table: dict[str, str]) -> str | None:
    candidates = [word]
    if word.endswith("ies"):
        candidates.append(word[:-3] + "y")
    if word.endswith("es"):
        candidates.append(word[:-2])
    if word.endswith("s"):
        candidates.append(word[:-1])
    return next((table[c] for c in candidates if c in table), None)


@dataclass
class PromptTerms:
    colours: list[RGB]
    time: str | None
    scenes: list[str]
    moods: list[str]
    features: set[str]
    recognised: list[str]
    unknown: list[str]


def parse_prompt(text: str) -> PromptTerms:
    """Pick out the words of `vocabulary` in a prompt, in order of appearance."""
    lowered = text.lower()
    terms = PromptTerms([], None, [], [], set(), [], [])
    for phrase, phrase_time in vocab.TIME_PHRASES.items():
        if phrase in lowered and terms.time is None:
            terms.time = phrase_time
            terms.recognised.append(phrase)
    colour_names = {name: name for name in COLOURS}
    for original in _WORD.findall(lowered):
        for word in vocab.EXPANSIONS.get(original, (original,)):
            time = _lookup(word, vocab.TIME_WORDS)
            scene = _lookup(word, vocab.SCENE_WORDS)
            mood = _lookup(word, vocab.MOOD_WORDS)
            colour = _lookup(word, colour_names)
            feature = _lookup(word, vocab.FEATURE_WORDS)
            if time and terms.time is None:
                terms.time = time
            if scene and scene not in terms.scenes:
                terms.scenes.append(scene)
            if mood and mood not in terms.moods:
                terms.moods.append(mood)
            if colour and COLOURS[colour] not in terms.colours:
                terms.colours.append(COLOURS[colour])
            if feature:
                terms.features.add(feature)
            if time or scene or mood or colour or feature:
                terms.recognised.append(word)
            else:
                terms.unknown.append(word)
    return terms


def dominant_colours(images: Sequence[Image.Image], count: int = 3) -> list[RGB]:
    """The most common colours of reference images, by median cut on small thumbnails."""
    weighted: list[tuple[float, RGB]] = []
    for image in images:
        thumbnail = image.convert("RGB")
        thumbnail.thumbnail((64, 64))
        quantized = thumbnail.quantize(colors=4, method=Image.Quantize.MEDIANCUT)
        palette = quantized.getpalette() or []
        pixels = thumbnail.width * thumbnail.height
        for used, index in quantized.getcolors() or []:
            assert isinstance(index, int)  # a palette image's colours are palette indices
            red, green, blue = palette[3 * index : 3 * index + 3]
            weighted.append((used / pixels, (red / 255.0, green / 255.0, blue / 255.0)))
    weighted.sort(key=lambda pair: -pair[0])
    return [rgb for _, rgb in weighted[:count]]


# --- palette ------------------------------------------------------------------------------------


def _luma(colour: Float) -> float:
    return float(colour @ LUMA)


def _tinted(colour: Float, target: Float, strength: float) -> Float:
    """Move towards the hue of `target` while keeping the colour's own brightness."""
    target_luma = _luma(target)
    if target_luma > 1e-3:
        matched = np.clip(target * (_luma(colour) / target_luma), 0.0, 1.0)
    else:
        matched = np.full(3, _luma(colour), dtype=np.float32)
    return colour + (matched - colour) * strength


def _saturated(colour: Float, factor: float) -> Float:
    grey = _luma(colour)
    return np.clip(grey + (colour - grey) * factor, 0.0, 1.0)


SKY_ROLES = ("zenith", "mid", "horizon", "haze", "cloud")
LAND_ROLES = ("land_far", "land_near", "water")


@dataclass
class Palette:
    time: str
    zenith: Float
    mid: Float
    horizon: Float
    light: Float
    haze: Float
    cloud: Float
    land_far: Float
    land_near: Float
    water: Float
    accents: list[Float]
    light_kind: str
    light_elevation: float
    clouds: float
    stars: float
    horizon_glow: float
    haze_amount: float = 0.35
    glow: float = 1.0
    waves: float = 1.0
    roughness: float = 1.0
    vignette: float = 0.25
    snow: float = 0.0
    neon: bool = False
    milky_way: bool = False
    planet: bool = False

    def recolour(self, roles: Sequence[str], change: Callable[[Float], Float]) -> None:
        for role in roles:
            setattr(self, role, change(getattr(self, role)))

    def apply_colours(self, colours: Sequence[RGB], strength: float) -> None:
        """Lead colour for sky top, near land and water; second for horizon and far land."""
        if not colours:
            return
        first = _colour(colours[0])
        second = _colour(colours[1 if len(colours) > 1 else 0])
        third = _colour(colours[min(2, len(colours) - 1)])
        self.recolour(
            ("zenith", "mid", "land_near", "water"), lambda c: _tinted(c, first, strength)
        )
        self.recolour(
            ("horizon", "haze", "cloud", "land_far"), lambda c: _tinted(c, second, strength)
        )
        self.light = _tinted(self.light, third, strength * 0.5)

    def apply_mood(self, mood: vocab.Mood) -> None:
        def change(colour: Float) -> Float:
            colour = _saturated(colour, mood.saturation) * mood.value
            colour = colour + (1.0 - colour) * mood.lift
            if mood.tint is not None:
                colour = _tinted(colour, _colour(mood.tint), mood.tint_strength)
            return np.clip(colour, 0.0, 1.0)

        self.recolour(SKY_ROLES + LAND_ROLES, change)
        self.haze_amount = float(np.clip(self.haze_amount + mood.haze, 0.0, 1.0))
        self.clouds *= mood.clouds
        self.waves *= mood.waves
        self.glow *= mood.glow
        self.roughness *= mood.roughness
        self.vignette += mood.vignette
        self.snow = max(self.snow, mood.snow)
        self.neon = self.neon or mood.neon


def layout_of(terms: PromptTerms) -> str:
    """`space`, `sea`, `sky` or `land`: what the picture is built around."""
    ground = [s for s in terms.scenes if s in GROUND_SCENES]
    if "sea" in terms.scenes:
        return "sea"
    if "space" in terms.scenes and not ground:
        return "space"
    if "sky" in terms.scenes and not ground:
        return "sky"
    return "land"


def build_palette(
    terms: PromptTerms,
    layout: str,
    references: Sequence[Image.Image],
    style: StyleHints | None,
) -> Palette:
    fallback_key = " ".join(terms.unknown)
    if layout == "space":
        time = "space"
    elif terms.time:
        time = terms.time
    elif "space" in terms.scenes:
        time = "night"
    elif fallback_key:
        time = vocab.FALLBACK_TIMES[stable_int("time", fallback_key) % len(vocab.FALLBACK_TIMES)]
    else:
        time = "day"
    tod = vocab.TIMES_OF_DAY[time]
    ground = [s for s in terms.scenes if s in GROUND_SCENES]
    scene = vocab.SCENES[ground[0] if ground else {"land": "hills"}.get(layout, layout)]
    land_light = _colour(tod.land_light)
    palette = Palette(
        time=time,
        zenith=_colour(tod.zenith),
        mid=_colour(tod.mid),
        horizon=_colour(tod.horizon),
        light=_colour(tod.light),
        haze=_colour(tod.haze),
        cloud=_colour(tod.cloud),
        land_far=_colour(scene.land_far) * land_light,
        land_near=_colour(scene.land_near) * land_light,
        water=_colour(scene.water) * land_light,
        accents=[_colour(c) for c in WINDOW_LIGHTS],
        light_kind=tod.light_kind,
        light_elevation=tod.light_elevation,
        clouds=tod.clouds,
        stars=tod.stars,
        horizon_glow=tod.horizon_glow,
    )
    features = terms.features
    if "moon" in features:
        palette.light_kind = "moon"
    elif "sun" in features:
        palette.light_kind = "sun"
    if "stars" in features:
        palette.stars = max(palette.stars, 0.7)
    if "clouds" in features:
        palette.clouds = max(palette.clouds, 0.75)
    if "clear" in features:
        palette.clouds *= 0.15
    if layout == "sky":
        palette.clouds = max(palette.clouds, 0.65)
    palette.planet = "planet" in features
    palette.milky_way = "milky_way" in features or ("space" in terms.scenes and layout != "space")

    reference_colours = dominant_colours(references)
    style_colours = [c for c in map(parse_hex_colour, style.palette if style else ()) if c]
    palette.apply_colours(terms.colours, 0.6)
    palette.apply_colours(reference_colours, 0.25 if terms.colours else 0.35)
    palette.apply_colours(style_colours, 0.75)
    if not (terms.colours or reference_colours or style_colours) and fallback_key:
        hue = (stable_int("hue", fallback_key) % 1000) / 1000.0
        palette.apply_colours([colorsys.hsv_to_rgb(hue, 0.55, 0.85)], 0.22)
    for mood in terms.moods:
        palette.apply_mood(vocab.MOODS[mood])
    if palette.neon:
        palette.zenith *= 0.45
        palette.mid *= 0.6
        palette.recolour(LAND_ROLES, lambda c: c * 0.6)
        chosen = style_colours or terms.colours
        palette.accents = [_saturated(_colour(c), 1.3) for c in chosen] or [
            _colour(c) for c in NEON_ACCENTS
        ]
        palette.horizon_glow += 0.3
    return palette


# --- noise --------------------------------------------------------------------------------------

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


def _stretched(noise: Float, contrast: float = 2.2) -> Float:
    # Summed octaves huddle around 0.5; spread them back over [0, 1].
    return np.clip((noise - 0.5) * contrast + 0.5, 0.0, 1.0)


# --- layout -------------------------------------------------------------------------------------


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
        ragged = _stretched(self.snow_edge(u, 0.6), 2.5)
        return (heights + above * (0.15 + 0.7 * ragged)).astype(np.float32)

    def heights(self, u: Float) -> Float:
        if self.kind == "mountains":
            ridged = 1.0 - np.abs(2.0 * self.peaks(u) - 1.0)
            shape = 0.45 * _stretched(self.shape(u, 0.58)) + 0.7 * ridged**2
        elif self.kind == "dunes":
            # Folding the noise gives sharp crests between rounded troughs.
            shape = (1.0 - np.abs(2.0 * _stretched(self.shape(u, 0.3), 1.6) - 1.0)) ** 1.3
        else:
            shape = _stretched(self.shape(u, 0.45))
        if self.partial:
            shape = shape * np.clip(_stretched(self.extent(u)) * 2.5 - 0.8, 0.0, 1.0)
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


@dataclass
class Layer:
    ridge: Ridge
    depth: float  # 0 is the farthest layer, 1 the nearest
    colour: Float
    foot: float  # where mist at the layer's base is thickest, in image units
    mist: float
    shade: float  # how strongly slopes facing the light brighten
    rim: float  # light caught along the skyline
    texture: float
    snow: float
    windows_lit: float  # share of lit windows; negative for a city without windows


@dataclass
class Light:
    u: float
    v: float
    radius: float
    kind: str


@dataclass
class Stars:
    u: Float
    v: Float
    brightness: Float
    sigma: Float  # in units; at least half a pixel once painted


@dataclass
class Planet:
    u: float
    v: float
    radius: float
    bands: Noise1D
    colours: tuple[Float, Float]


@dataclass
class Plan:
    width_units: float
    height_units: float
    horizon: float
    light: Light | None
    stars: Stars | None
    clouds: Noise2D | None
    nebula: Noise2D | None
    milky_way: tuple[float, float, float] | None  # angle, centre column and width of the band
    planet: Planet | None
    layers: list[Layer]
    water: Noise2D | None
    texture: Noise2D


def _layer_kinds(
    terms: PromptTerms, layout: str, rng: np.random.Generator, extra: int
) -> list[str]:
    ground = [s for s in GROUND_SCENES if s in terms.scenes]
    if layout == "sea":
        if ground:
            return [LAYER_KINDS[ground[0]]]
        return ["headland"] if rng.random() < 0.6 else []
    if layout == "space":
        return []
    if layout == "sky":
        return ["hills"]
    kinds = [kind for scene in (ground or ["hills"]) for kind in [LAYER_KINDS[scene]] * 2]
    while len(kinds) < 3 + extra:
        kinds.insert(0, FAR_COMPANION[kinds[0]])
    if len(kinds) > 5 + extra:
        kinds = kinds[: 4 + extra] + kinds[-1:]
    return kinds


def _plan_layers(
    kinds: list[str],
    palette: Palette,
    plan_rng: np.random.Generator,
    root: int,
    plan: Plan,
    detail: int,
) -> list[Layer]:
    width, height, horizon = plan.width_units, plan.height_units, plan.horizon
    sky_height = horizon
    layers: list[Layer] = []
    count = len(kinds)
    bases = [
        horizon + (height - horizon) * 0.55 * (i / max(1, count - 1)) ** 1.3 for i in range(count)
    ]
    for index, kind in enumerate(kinds):
        rng = _rng(root, f"layer-{index}")
        depth = index / max(1, count - 1) if count > 1 else 0.0
        base = bases[index]
        ridge: Ridge
        if kind == "mountains":
            amplitude = (
                sky_height * rng.uniform(0.3, 0.5) * (1.0 - 0.45 * depth) * palette.roughness
            )
            ridge = NoiseRidge(rng, kind, base, amplitude, detail)
        elif kind in ("hills", "headland"):
            amplitude = rng.uniform(0.06, 0.11) * height * palette.roughness
            if kind == "headland":
                amplitude = sky_height * rng.uniform(0.12, 0.25)
            ridge = NoiseRidge(rng, kind, base, amplitude, detail)
        elif kind == "dunes":
            ridge = NoiseRidge(rng, kind, base, rng.uniform(0.05, 0.09) * height, detail)
        elif kind == "forest":
            ridge = ForestRidge(rng, base, depth, width)
        else:
            ridge = CityRidge(rng, base, depth, width)
        near = depth**0.85
        colour = palette.land_far + (palette.land_near - palette.land_far) * near
        colour = colour + (palette.haze - colour) * (palette.haze_amount * (1.0 - depth) ** 1.5)
        snow = palette.snow
        if kind == "mountains" and palette.time == "day" and plan_rng.random() < 0.5:
            snow = max(snow, 0.5)
        rim = {"sunset": 0.35, "dawn": 0.3, "golden": 0.3, "day": 0.12}.get(palette.time, 0.06)
        lit = -1.0
        if kind == "city":
            lit = {"night": 0.5, "dusk": 0.4, "sunset": 0.25}.get(palette.time, 0.0)
            lit = 0.6 if palette.neon else lit
        layers.append(
            Layer(
                ridge=ridge,
                depth=depth,
                colour=colour.astype(np.float32),
                foot=bases[index + 1] if index + 1 < count else height,
                mist=(0.2 + 0.5 * palette.haze_amount) * (1.0 - depth),
                shade={"dunes": 0.7, "hills": 0.15}.get(kind, 0.0),
                rim=rim * (1.0 - 0.6 * depth),
                texture=0.04 + 0.08 * depth,
                snow=snow if isinstance(ridge, NoiseRidge) else 0.0,
                windows_lit=lit,
            )
        )
    return layers


def plan_scene(
    terms: PromptTerms,
    layout: str,
    palette: Palette,
    root: int,
    width_units: float,
    height_units: float,
    quality: QualitySettings,
) -> Plan:
    """Everything random about one picture, in units of the image's shorter side."""
    rng = _rng(root, "layout")
    horizon_range = {"sea": (0.5, 0.64), "sky": (0.78, 0.88), "space": (1.3, 1.3)}.get(
        layout, (0.55, 0.68)
    )
    horizon = height_units * rng.uniform(*horizon_range)
    light = None
    if palette.light_kind != "none":
        elevation = palette.light_elevation * rng.uniform(0.75, 1.25)
        sky_height = min(horizon, height_units)
        light = Light(
            u=width_units * rng.uniform(0.2, 0.8),
            v=horizon - elevation * sky_height
            if layout != "space"
            else height_units * rng.uniform(0.15, 0.5),
            radius=(0.035 if palette.light_kind == "sun" else 0.03) * rng.uniform(0.8, 1.25),
            kind=palette.light_kind,
        )
    stars = None
    area = width_units * min(horizon, height_units)
    if palette.stars > 0:
        star_rng = _rng(root, "stars")
        count = int(700 * palette.stars * area)
        brightness = star_rng.random(count, dtype=np.float32) ** 4
        stars = Stars(
            u=(star_rng.random(count) * width_units).astype(np.float32),
            v=(star_rng.random(count) * min(horizon, height_units)).astype(np.float32),
            brightness=(0.25 + 0.75 * brightness).astype(np.float32),
            sigma=((0.4 + 1.4 * brightness) / 1024.0).astype(np.float32),
        )
    clouds = None
    if palette.clouds > 0.02 and layout != "space":
        clouds = Noise2D(_rng(root, "clouds"), quality.octaves)
    nebula = None
    milky_way = None
    if layout == "space" or palette.milky_way or (palette.stars >= 1.0 and rng.random() < 0.4):
        nebula = Noise2D(_rng(root, "nebula"), quality.octaves)
        if layout != "space":
            angle = rng.uniform(0.5, math.pi - 0.5)  # steep rather than flat across the sky
            milky_way = (angle, width_units * rng.uniform(0.25, 0.75), rng.uniform(0.12, 0.2))
    planet = None
    if layout == "space" and (palette.planet or rng.random() < 0.6):
        planet_rng = _rng(root, "planet")
        radius = planet_rng.uniform(0.18, 0.4)
        planet = Planet(
            u=width_units * planet_rng.uniform(0.2, 0.8),
            v=height_units * planet_rng.uniform(0.45, 0.95),
            radius=radius,
            bands=Noise1D(planet_rng, 3.0, 4),
            colours=(palette.land_far, palette.cloud),
        )
    plan = Plan(
        width_units=width_units,
        height_units=height_units,
        horizon=horizon,
        light=light,
        stars=stars,
        clouds=clouds,
        nebula=nebula,
        milky_way=milky_way,
        planet=planet,
        layers=[],
        water=Noise2D(_rng(root, "water"), min(4, quality.octaves)) if layout == "sea" else None,
        texture=Noise2D(_rng(root, "texture"), min(4, quality.octaves)),
    )
    kinds = _layer_kinds(terms, layout, rng, quality.extra_layers)
    plan.layers = _plan_layers(kinds, palette, rng, root, plan, quality.octaves)
    if light is not None and plan.layers:
        # Keep the sun or moon peeking over the skyline rather than hidden behind it.
        around = np.linspace(light.u - 2 * light.radius, light.u + 2 * light.radius, 32)
        skyline = min(
            float(layer.ridge.heights(around.astype(np.float32)).min()) for layer in plan.layers
        )
        light.v = min(light.v, skyline - 0.4 * light.radius)
    return plan


# --- painting -----------------------------------------------------------------------------------


def _box_blur(values: Float, width: float) -> Float:
    """A running mean over about `width` samples, edges held."""
    half = int(width // 2)
    if half < 1:
        return values
    padded = np.pad(values, (half + 1, half), mode="edge")
    sums = np.cumsum(padded, dtype=np.float64)
    return ((sums[2 * half + 1 :] - sums[: -2 * half - 1]) / (2 * half + 1)).astype(np.float32)


def _screen(canvas: Float, colour: Float, amount: Float) -> None:
    """Screen-blend `colour` scaled by `amount` (rows x columns) into the canvas, in place."""
    for channel in range(3):
        plane = canvas[..., channel]
        plane += (1.0 - plane) * (amount * colour[channel])


def _blend(canvas: Float, colour: Float, amount: Float) -> None:
    """Mix towards `colour` (broadcastable to the canvas) by `amount` (rows x columns)."""
    canvas += (colour - canvas) * amount[..., None]


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


class Painter:
    """Paints a plan at one pixel size, a strip of rows at a time."""

    def __init__(
        self, plan: Plan, palette: Palette, width: int, height: int, grain: np.random.Generator
    ) -> None:
        self.plan, self.palette = plan, palette
        self.width, self.height = width, height
        self.scale = float(min(width, height))  # pixels per unit
        self.u = ((np.arange(width, dtype=np.float32) + 0.5) / self.scale).astype(np.float32)
        self.v = ((np.arange(height, dtype=np.float32) + 0.5) / self.scale).astype(np.float32)
        self.grain_rng = grain
        self.sky_rows = self._sky_colours(self.v)
        self.texture = plan.texture.field(self.u * 9.0, self.v * 9.0)
        self._prepare_sky()
        self._prepare_layers()
        self._prepare_water()
        self._prepare_finish()

    # Row colour tables and per-column profiles are computed once; strips only combine them.

    def _sky_colours(self, v: Float) -> Float:
        palette = self.palette
        t = np.clip(v / self.plan.horizon, 0.0, 1.0) ** 1.25
        stops = np.array([0.0, 0.55, 1.0], dtype=np.float32)
        colours = np.stack([palette.zenith, palette.mid, palette.horizon])
        return np.stack(
            [np.interp(t, stops, colours[:, c]).astype(np.float32) for c in range(3)], axis=1
        )

    def _prepare_sky(self) -> None:
        plan, palette = self.plan, self.palette
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
            self.cloud_band = (
                _smoothstep(0.02, 0.25, t) * (1.0 - _smoothstep(0.8, 1.0, t))
            ).astype(np.float32)
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
            self.band_fade = (0.6 * _smoothstep(0.0, 0.3, horizon - self.v)).astype(np.float32)
        if plan.stars is not None:
            fade = _smoothstep(0.0, 0.25, horizon - plan.stars.v)
            self.star_brightness = (
                plan.stars.brightness * fade * min(1.0, self.palette.stars)
            ).astype(np.float32)
            self.star_sigma_px = np.maximum(plan.stars.sigma * self.scale, 0.5).astype(np.float32)

    def _prepare_layers(self) -> None:
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
                brightness = min(1.0, 0.25 + 3.0 * _luma(layer.colour))
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
            mist = _smoothstep(top, max(layer.foot, top + 1e-3), v) * layer.mist
            colour += (palette.haze - colour) * mist[:, None]
        else:
            colour *= (1.0 - 0.35 * _smoothstep(top, self.plan.height_units, v))[:, None]
        return colour.astype(np.float32)

    def _prepare_water(self) -> None:
        plan = self.plan
        if plan.water is None:
            return
        below = np.maximum(self.v - plan.horizon, 0.0)
        depth = below / max(plan.height_units - plan.horizon, 1e-3)
        mirrored = self._sky_colours(plan.horizon - below * 1.4)
        deep = self.palette.water
        mix = (_smoothstep(0.0, 1.0, depth) * 0.75)[:, None]
        self.water_rows = (mirrored * 0.9 + (deep - mirrored * 0.9) * mix).astype(np.float32)
        self.water_field = plan.water.field(self.u * 3.0, 16.0 / (depth + 0.04))
        self.wave_rows = (0.22 * self.palette.waves * _smoothstep(0.0, 0.25, depth)).astype(
            np.float32
        )
        self.water_depth = depth.astype(np.float32)

    def _prepare_finish(self) -> None:
        x = (self.u / self.plan.width_units - 0.5) * 2.0
        y = (self.v / self.plan.height_units - 0.5) * 2.0
        strength = self.palette.vignette
        self.vignette_columns = (strength * 0.5 * x * x).astype(np.float32)
        self.vignette_rows = (strength * 0.5 * y * y).astype(np.float32)

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
        canvas[:] = self.sky_rows[start:stop, None, :]
        horizon_row = self.plan.horizon * self.scale
        if start < horizon_row:
            self._paint_sky(canvas, start, stop)
        texture = self.texture.rows(start, stop)
        for painted in self.layers:
            self._paint_layer(canvas, start, stop, texture, painted)
        if self.plan.water is not None and stop > horizon_row:
            self._paint_water(canvas, start, stop)
        return self._finish(canvas, start, stop)

    def _paint_sky(self, canvas: Float, start: int, stop: int) -> None:
        plan, palette = self.plan, self.palette
        if self.glow_rows is not None and self.glow_columns is not None:
            glow = self.glow_rows[start:stop, None] * self.glow_columns[None, :]
            _screen(canvas, palette.light, glow)
        if plan.nebula is not None:
            self._paint_nebula(canvas, start, stop)
        if plan.stars is not None:
            self._paint_stars(canvas, start, stop)
        if plan.clouds is not None and self.cloud_band[start:stop].max() > 0:
            density = self.cloud_field.rows(start, stop)
            threshold = self.cloud_threshold
            cover = _smoothstep(threshold, threshold + 0.22, density)
            cover *= self.cloud_band[start:stop, None] * min(1.0, 0.55 + 0.3 * palette.clouds)
            # Thick cores read as shaded undersides.
            shading = 1.05 - 0.3 * _smoothstep(threshold + 0.12, threshold + 0.4, density)
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
        cloud = _smoothstep(0.4, 0.75, density) * strength
        _screen(canvas, palette.cloud, cloud)
        core = _smoothstep(0.58, 0.85, density) * strength
        _screen(canvas, np.clip(palette.mid * 2.5 + 0.15, 0, 1), core * 0.7)

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
            _screen(canvas, _colour((0.92, 0.95, 1.0)), np.minimum(plane, 1.0))

    def _paint_light(self, canvas: Float, start: int, stop: int, light: Light) -> None:
        palette = self.palette
        dx2 = ((self.u - light.u) ** 2)[None, :]
        dy2 = ((self.v[start:stop] - light.v) ** 2)[:, None]
        distance2 = dx2 + dy2
        radius = light.radius
        glow_strength = palette.glow * (0.55 if light.kind == "sun" else 0.3)
        glow = glow_strength * np.exp(distance2 * (-1.0 / (2.0 * (3.0 * radius) ** 2)))
        glow += glow_strength * 0.5 / (1.0 + distance2 * (1.0 / (9.0 * radius) ** 2))
        _screen(canvas, palette.light, glow)
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
        _blend(region, face_colour, disc)

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
        bands = _stretched(planet.bands((v - planet.v) / planet.radius))[:, None, None]
        first, second = planet.colours
        surface = (first + (second - first) * bands) * (0.05 + 0.95 * lambert)[..., None]
        distance = np.sqrt(distance2)
        body = np.clip((1.0 - distance) * planet.radius * self.scale + 0.5, 0.0, 1.0)
        region = canvas[row_lo - start : row_hi - start, col_lo:col_hi]
        _blend(region, surface, body)
        rim = np.exp(-np.abs(distance - 1.0) / 0.04) * (0.3 + 0.7 * lambert) * 0.8
        _screen(region, np.clip(self.palette.horizon * 1.5 + 0.1, 0, 1), rim)

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
            _blend(colour, painted.snow_colour * factor[..., None], cover)
        if layer.rim > 0:
            rim = np.clip(1.0 - below_ridge * (1.0 / max(1.0, 0.0015 * self.scale)), 0.0, 1.0)
            _screen(colour, self.palette.light, rim * layer.rim)
        if painted.windows is not None:
            self._paint_windows(colour, first, stop, below_ridge, layer, painted.windows)
        _blend(region, colour, alpha)

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

    def _paint_water(self, canvas: Float, start: int, stop: int) -> None:
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
        sparkle = _smoothstep(0.45, 0.7, waves)
        strength = (0.9 if light.kind == "sun" else 0.6) * max(
            0.3, 1.0 - self.palette.light_elevation
        )
        _screen(region, self.palette.light, path * sparkle * strength * self.palette.glow)

    def _finish(self, canvas: Float, start: int, stop: int) -> NDArray[np.uint8]:
        darkening = 1.0 - (self.vignette_rows[start:stop, None] + self.vignette_columns[None, :])
        grain = self.grain_rng.random(darkening.shape, dtype=np.float32)
        # Grain doubles as dither: it hides banding in smooth gradients.
        grain = (grain - 0.5) * 6.0 + 0.5
        canvas *= (darkening * 255.0)[..., None]
        canvas += grain[..., None]
        np.clip(canvas, 0.0, 255.0, out=canvas)
        return canvas.astype(np.uint8)


# --- pipeline -----------------------------------------------------------------------------------


class BuiltinGenerate:
    """Text to image with no model: a procedural painter steered by the prompt's words, then
    painted over in a learned style the prompt names and in the look of any references."""

    operation = "generate"

    def run(self, inputs: GenerateInput, control: JobControl) -> ImageOutput:
        quality = QUALITIES.get(inputs.quality)
        if quality is None:
            raise ValueError(
                f"unknown quality {inputs.quality!r}; expected one of {list(QUALITIES)}"
            )
        if inputs.width < 1 or inputs.height < 1 or inputs.variations < 1:
            raise ValueError("width, height and variations must be positive")
        extra_words = " ".join((*inputs.style.tone, inputs.style.aesthetic)) if inputs.style else ""
        text = f"{inputs.prompt} {extra_words}"
        terms = parse_prompt(text)
        layout = layout_of(terms)
        palette = build_palette(terms, layout, inputs.references, inputs.style)
        learned = painting_styles.find_learned_style(text)
        board = painting_styles.reference_board(inputs.references) if inputs.references else None
        paint_width = max(1, round(inputs.width * quality.render_scale))
        paint_height = max(1, round(inputs.height * quality.render_scale))
        shorter = min(paint_width, paint_height)
        # Styling costs about as much as painting at 1K; give it a matching share of progress.
        paint_share = 0.4 if learned or board else 1.0
        images = []
        for index in range(inputs.variations):
            control.progress(
                PROGRESS_SHARE * index / inputs.variations,
                f"planning image {index + 1} of {inputs.variations}",
            )
            root = stable_int(inputs.seed, index)
            plan = plan_scene(
                terms, layout, palette, root, paint_width / shorter, paint_height / shorter, quality
            )
            painter = Painter(plan, palette, paint_width, paint_height, _rng(root, "grain"))
            image = painter.paint(self._reporter(control, index, inputs.variations, paint_share))
            if image.size != (inputs.width, inputs.height):
                image = image.resize((inputs.width, inputs.height), Image.Resampling.LANCZOS)
            if learned or board:
                control.progress(
                    PROGRESS_SHARE * (index + paint_share) / inputs.variations, "styling"
                )
                image = paint_over(image, learned[0] if learned else None, board)
            images.append(image)
        notes = [
            f"builtin procedural painter: {layout} layout, {palette.time} light",
            "understood: "
            + (", ".join(terms.recognised) or "nothing; palette from the prompt text"),
        ]
        if learned:
            notes.append(
                f"painted in the learned style {learned[0].name!r} (from {learned[1][0]!r})"
            )
        if board:
            notes.append(
                f"look taken from {len(inputs.references)} reference image(s) by style transfer"
            )
        log_peak_memory(log, "generate", inputs.width, inputs.height)
        return ImageOutput(images=images, notes=notes)

    @staticmethod
    def _reporter(
        control: JobControl, index: int, count: int, share: float
    ) -> Callable[[float], None]:
        """Report a few times per image rather than once per strip."""
        next_report = 1.0 / REPORTS_PER_IMAGE

        def report(done: float) -> None:
            nonlocal next_report
            if done >= next_report:
                next_report += 1.0 / REPORTS_PER_IMAGE
                control.progress(PROGRESS_SHARE * (index + done * share) / count, "painting")

        return report


# Full strength would lose the composition under some styles' strokes.
LEARNED_STYLE_STRENGTH = 0.9
REFERENCE_STRENGTH = 0.7
REFERENCE_STRENGTH_UNDER_STYLE = 0.45


def paint_over(
    image: Image.Image, learned: painting_styles.LearnedStyle | None, board: Image.Image | None
) -> Image.Image:
    """The learned style first; then the references pull the look (and colours) their way."""
    engine = painting_styles.shared_engine()
    picture = to_array(image)
    if learned is not None:
        picture = engine.learned(picture, learned, LEARNED_STYLE_STRENGTH)
    if board is not None:
        strength = REFERENCE_STRENGTH_UNDER_STYLE if learned else REFERENCE_STRENGTH
        picture = engine.from_reference(picture, board, strength)
    return to_image(picture)
