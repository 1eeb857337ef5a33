"""Palette building: OKLab distances, merging near-duplicates, roles and readable names."""

from __future__ import annotations

import io
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from PIL import Image

from pipelines.styles.css import Rgb, colours_in

# OKLab distance under which two colours read as the same brand colour.
MERGE_DISTANCE = 0.045
CHROMATIC = 0.04
MAX_SOLIDS = 8
MAX_MERGED = 200
MAX_IMAGE_PIXELS = 40_000_000


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


@lru_cache(maxsize=4096)
def oklab(colour: Rgb) -> tuple[float, float, float]:
    r, g, b = _linear(colour.red), _linear(colour.green), _linear(colour.blue)
    l_ = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b) ** (1 / 3)
    m_ = (0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b) ** (1 / 3)
    s_ = (0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b) ** (1 / 3)
    return (
        0.2104542553 * l_ + 0.7936177850 * m_ - 0.0040720468 * s_,
        1.9779984951 * l_ - 2.4285922050 * m_ + 0.4505937099 * s_,
        0.0259040371 * l_ + 0.7827717662 * m_ - 0.8086757660 * s_,
    )


def distance(first: Rgb, second: Rgb) -> float:
    return math.dist(oklab(first), oklab(second))


def chroma(colour: Rgb) -> float:
    _, a, b = oklab(colour)
    return math.hypot(a, b)


_HUES = [
    (20, "Red"),
    (45, "Coral"),
    (70, "Orange"),
    (100, "Amber"),
    (115, "Yellow"),
    (135, "Lime"),
    (165, "Green"),
    (190, "Teal"),
    (220, "Cyan"),
    (272, "Blue"),
    (290, "Indigo"),
    (310, "Violet"),
    (335, "Purple"),
    (355, "Pink"),
    (360, "Red"),
]


def colour_name(colour: Rgb) -> str:
    """A short human name from OKLab lightness and hue, e.g. "Deep Blue" or "Off-White"."""
    lightness, a, b = oklab(colour)
    if math.hypot(a, b) < CHROMATIC:
        for limit, name in ((0.2, "Black"), (0.35, "Charcoal"), (0.6, "Gray"), (0.85, "Silver")):
            if lightness < limit:
                return name
        return "White" if lightness > 0.99 else "Off-White"
    hue = math.degrees(math.atan2(b, a)) % 360
    base = next(name for limit, name in _HUES if hue < limit)
    if base == "Orange" and lightness < 0.5:
        base = "Brown"
    if lightness < 0.45:
        return f"Deep {base}"
    if lightness > 0.85:
        return f"Pale {base}"
    return base


@dataclass
class Swatch:
    colour: Rgb
    weight: float = 0.0
    usage: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    hints: set[str] = field(default_factory=set)


class PaletteBuilder:
    """Accumulates weighted colour uses; near-identical colours merge when the palette is read."""

    def __init__(self) -> None:
        self.uses: dict[Rgb, Swatch] = {}

    def add(self, colour: Rgb, weight: float, usage: str, hint: str | None = None) -> None:
        swatch = self.uses.setdefault(colour, Swatch(colour))
        swatch.weight += weight
        swatch.usage[usage] += weight
        if hint:
            swatch.hints.add(hint)

    @property
    def swatches(self) -> list[Swatch]:
        """Merged swatches, heaviest first: each colour joins the heaviest one within
        MERGE_DISTANCE, which keeps its own hex. Only the heaviest colours are merged, so a
        utility framework's thousands of unused shades cost nothing."""
        merged: list[Swatch] = []
        for use in sorted(self.uses.values(), key=lambda s: -s.weight)[:MAX_MERGED]:
            target = next(
                (s for s in merged if distance(s.colour, use.colour) < MERGE_DISTANCE), None
            )
            if target is None:
                target = Swatch(use.colour)
                merged.append(target)
            target.weight += use.weight
            for usage, weight in use.usage.items():
                target.usage[usage] += weight
            target.hints |= use.hints
        return sorted(merged, key=lambda s: -s.weight)

    def solids(self) -> list[dict[str, str]]:
        ranked = self.swatches[:MAX_SOLIDS]
        roles = _assign_roles(ranked)
        names: Counter[str] = Counter()
        items = []
        for swatch in ranked:
            name = colour_name(swatch.colour)
            names[name] += 1
            if names[name] > 1:
                name = f"{name} {names[name]}"
            items.append(
                {"type": "solid", "name": name, "hex": swatch.colour.hex, "role": roles[id(swatch)]}
            )
        return items


_HINT_ROLES = ("primary", "secondary", "accent")


def _assign_roles(swatches: list[Swatch]) -> dict[int, str]:
    """Background and text by where they are used, brand roles by chroma and usage on buttons,
    links and the logo; named custom properties (`--primary`) take precedence."""
    roles: dict[int, str] = {}
    free = list(swatches)

    def take(role: str, candidates: list[Swatch], score: Callable[[Swatch], float]) -> None:
        if not candidates:
            return
        best = max(candidates, key=score)
        roles[id(best)] = role
        free.remove(best)

    for role in _HINT_ROLES:
        take(role, [s for s in free if role in s.hints], lambda s: s.weight)
    take(
        "background",
        [s for s in free if s.usage["background"] > 0],
        lambda s: s.usage["background"],
    )
    take("text", [s for s in free if s.usage["text"] > 0], lambda s: s.usage["text"])
    brandish = [s for s in free if chroma(s.colour) >= CHROMATIC]

    def brand_score(s: Swatch) -> float:
        return s.weight + 2 * (s.usage["button"] + s.usage["link"] + s.usage["logo"])

    for role in _HINT_ROLES:
        if role not in roles.values():
            take(role, [s for s in brandish if s in free], brand_score)
    for swatch in free:
        roles[id(swatch)] = "neutral" if chroma(swatch.colour) < CHROMATIC else "supporting"
    return roles


def role_hint(property_name: str) -> str | None:
    """`--color-primary`, `--brand` and the like name their role."""
    lowered = property_name.lower()
    if re.search(r"primary|brand", lowered):
        return "primary"
    if "secondary" in lowered:
        return "secondary"
    if re.search(r"accent|highlight", lowered):
        return "accent"
    return None


def image_colours(data: bytes, content_type: str | None, count: int = 3) -> list[Rgb]:
    """Dominant colours of a raster image (quantised on a thumbnail) or of an SVG's fills."""
    if (content_type and "svg" in content_type) or data.lstrip()[:5] in (b"<svg ", b"<?xml"):
        text = data.decode("utf-8", errors="replace")
        values = re.findall(r"(?:fill|stroke|stop-color|color)\s*[:=]\s*\"?([^;\"'>]+)", text)
        counts = Counter(c for value in values for c in colours_in(value))
        return [colour for colour, _ in counts.most_common(count)]
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                return []
            image.draft("RGB", (128, 128))
            rgba = image.convert("RGBA")
    except (OSError, ValueError, Image.DecompressionBombError):
        return []
    rgba.thumbnail((96, 96))
    pixels = np.asarray(rgba)
    opaque_pixels = pixels[pixels[..., 3] >= 128][:, :3]
    if not len(opaque_pixels):
        return []
    opaque = Image.fromarray(np.ascontiguousarray(opaque_pixels.reshape(1, -1, 3)), "RGB")
    quantised = opaque.quantize(colors=count + 2, method=Image.Quantize.MEDIANCUT)
    palette = quantised.getpalette() or []
    ranked = sorted(quantised.getcolors() or [], reverse=True)
    return [Rgb(*palette[int(i) * 3 : int(i) * 3 + 3]) for _, i in ranked[:count]]  # type: ignore[call-overload]


def image_shape(data: bytes) -> tuple[int, int] | None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
