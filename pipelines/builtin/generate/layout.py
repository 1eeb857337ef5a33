"""Layout planning: everything random about one picture, in units of its shorter side (so a seed
gives the same picture at any size): the horizon, the sun or moon, stars, clouds, a nebula or the
milky way, a planet, and the ground layers from far to near."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pipelines.builtin.generate.noise import Noise1D, Noise2D
from pipelines.builtin.generate.palette import Palette
from pipelines.builtin.generate.prompt import GROUND_SCENES, PromptTerms
from pipelines.builtin.generate.ridges import CityRidge, ForestRidge, NoiseRidge, Ridge
from pipelines.builtin.generate.seeds import rng_for
from pipelines.builtin.imaging import Float

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
    rng = rng_for(root, "layout")
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
        star_rng = rng_for(root, "stars")
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
        clouds = Noise2D(rng_for(root, "clouds"), quality.octaves)
    nebula = None
    milky_way = None
    if layout == "space" or palette.milky_way or (palette.stars >= 1.0 and rng.random() < 0.4):
        nebula = Noise2D(rng_for(root, "nebula"), quality.octaves)
        if layout != "space":
            angle = rng.uniform(0.5, math.pi - 0.5)  # steep rather than flat across the sky
            milky_way = (angle, width_units * rng.uniform(0.25, 0.75), rng.uniform(0.12, 0.2))
    planet = None
    if layout == "space" and (palette.planet or rng.random() < 0.6):
        planet_rng = rng_for(root, "planet")
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
        water=Noise2D(rng_for(root, "water"), min(4, quality.octaves)) if layout == "sea" else None,
        texture=Noise2D(rng_for(root, "texture"), min(4, quality.octaves)),
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
        rng = rng_for(root, f"layer-{index}")
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
