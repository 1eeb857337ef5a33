"""The picture's colours and weather: from its time of day and scene, then the prompt's colours,
the references' colours, a brand style's palette and the prompt's moods, in that order."""

from __future__ import annotations

import colorsys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from pipelines.base import StyleHints
from pipelines.builtin import vocabulary as vocab
from pipelines.builtin.generate.canvas import as_colour
from pipelines.builtin.generate.prompt import GROUND_SCENES, PromptTerms
from pipelines.builtin.generate.seeds import stable_int
from pipelines.builtin.imaging import Float, luma
from pipelines.media.colours import RGB, parse_hex_colour
from pipelines.styles.palette import CHROMATIC, oklab_many

WINDOW_LIGHTS = ((1.0, 0.8, 0.45), (1.0, 0.9, 0.65), (0.95, 0.68, 0.38))
NEON_ACCENTS = ((0.95, 0.15, 0.75), (0.1, 0.85, 0.95))


def _tinted(colour: Float, target: Float, strength: float) -> Float:
    """Move towards the hue of `target` while keeping the colour's own brightness."""
    target_luma = float(luma(target))
    if target_luma > 1e-3:
        matched = np.clip(target * (float(luma(colour)) / target_luma), 0.0, 1.0)
    else:
        matched = np.full(3, float(luma(colour)), dtype=np.float32)
    return colour + (matched - colour) * strength


def _saturated(colour: Float, factor: float) -> Float:
    grey = float(luma(colour))
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
    land_light_level: float = 1.0  # how bright the time of day lights the land: 1 at noon
    # A brand style's coloured colours, strongest first: its primary, then its accent.
    brand: list[Float] = field(default_factory=list)

    def recolour(self, roles: Sequence[str], change: Callable[[Float], Float]) -> None:
        for role in roles:
            setattr(self, role, change(getattr(self, role)))

    def apply_colours(self, colours: Sequence[RGB], strength: float) -> None:
        """Lead colour for sky top, near land and water; second for horizon and far land."""
        if not colours:
            return
        first = as_colour(colours[0])
        second = as_colour(colours[1 if len(colours) > 1 else 0])
        third = as_colour(colours[min(2, len(colours) - 1)])
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
                colour = _tinted(colour, as_colour(mood.tint), mood.tint_strength)
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


# OKLab chroma from which a brand colour counts as a colour rather than a neutral (its background
# or text): the palette module's threshold for brand roles.
BRAND_CHROMA = CHROMATIC


def _chroma(colour: RGB) -> float:
    _, a, b = oklab_many(np.array([colour]) * 255.0)[0]
    return float(np.hypot(a, b))


def brand_order(colours: list[RGB]) -> list[RGB]:
    """A brand palette's colours with the coloured ones first, in their order of importance: a
    style's palette leads with its background and text, which are mostly white and near black,
    and its primary and accent should lead the picture."""
    coloured = [c for c in colours if _chroma(c) >= BRAND_CHROMA]
    return coloured + [c for c in colours if _chroma(c) < BRAND_CHROMA]


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
    land_light = as_colour(tod.land_light)
    palette = Palette(
        time=time,
        zenith=as_colour(tod.zenith),
        mid=as_colour(tod.mid),
        horizon=as_colour(tod.horizon),
        light=as_colour(tod.light),
        haze=as_colour(tod.haze),
        cloud=as_colour(tod.cloud),
        land_far=as_colour(scene.land_far) * land_light,
        land_near=as_colour(scene.land_near) * land_light,
        water=as_colour(scene.water) * land_light,
        accents=[as_colour(c) for c in WINDOW_LIGHTS],
        light_kind=tod.light_kind,
        light_elevation=tod.light_elevation,
        clouds=tod.clouds,
        stars=tod.stars,
        horizon_glow=tod.horizon_glow,
        land_light_level=float(luma(land_light)),
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
    style_colours = brand_order(
        [c for c in map(parse_hex_colour, style.palette if style else ()) if c]
    )
    palette.brand = [as_colour(c) for c in style_colours if _chroma(c) >= BRAND_CHROMA]
    palette.apply_colours(terms.colours, 0.6)
    palette.apply_colours(reference_colours, 0.25 if terms.colours else 0.35)
    palette.apply_colours(style_colours, 0.75)
    if not (terms.colours or reference_colours or style_colours) and fallback_key:
        hue = (stable_int("hue", fallback_key) % 1000) / 1000.0
        palette.apply_colours([colorsys.hsv_to_rgb(hue, 0.55, 0.85)], 0.22)
    for mood in terms.moods:
        palette.apply_mood(vocab.MOODS[mood])
    if palette.brand:
        # The brand's primary is the near land, as it is; its accent lights the horizon.
        palette.land_near = palette.brand[0].copy()
        if len(palette.brand) > 1:
            palette.horizon = palette.brand[1] + (palette.horizon - palette.brand[1]) * 0.25
    if palette.neon:
        palette.zenith *= 0.45
        palette.mid *= 0.6
        palette.recolour(LAND_ROLES, lambda c: c * 0.6)
        chosen = style_colours or terms.colours
        palette.accents = [_saturated(as_colour(c), 1.3) for c in chosen] or [
            as_colour(c) for c in NEON_ACCENTS
        ]
        palette.horizon_glow += 0.3
    return palette
