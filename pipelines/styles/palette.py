"""Palette building: OKLab distances, merging near-duplicates, roles and readable names."""

from __future__ import annotations

import io
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image

from pipelines.styles.colours import Rgb, colours_in

# OKLab distance under which two colours read as the same brand colour.
MERGE_DISTANCE = 0.045
CHROMATIC = 0.04
MAX_SOLIDS = 8
MAX_MERGED = 200
MAX_IMAGE_PIXELS = 40_000_000
# How much one use of a colour weighs, by where it is used; both paths use these.
BASE_WEIGHT = {"background": 3.0, "text": 2.0, "border": 1.0, "fill": 1.0}
# Elements that are buttons by their classes or role (`btn`, `button-primary`, `cta`).
BUTTONISH = re.compile(r"\b(btn|button|cta)\b|btn-|button-|cta-", re.IGNORECASE)


_TO_LMS = np.array(
    [
        [0.4122214708, 0.5363325363, 0.0514459929],
        [0.2119034982, 0.6806995451, 0.1073969566],
        [0.0883024619, 0.2817188376, 0.6299787005],
    ]
)
_TO_LAB = np.array(
    [
        [0.2104542553, 0.7936177850, -0.0040720468],
        [1.9779984951, -2.4285922050, 0.4505937099],
        [0.0259040371, 0.7827717662, -0.8086757660],
    ]
)


def oklab_many(rgb: np.ndarray) -> np.ndarray:
    """OKLab (L, a, b) of an (n, 3) array of 0-255 sRGB colours."""
    channels = np.asarray(rgb, dtype=np.float64) / 255
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return np.asarray(np.cbrt(linear @ _TO_LMS.T) @ _TO_LAB.T)


_FROM_LAB = np.linalg.inv(_TO_LAB)
_FROM_LMS = np.linalg.inv(_TO_LMS)


def srgb_from_oklab(lab: np.ndarray) -> np.ndarray:
    """The inverse of `oklab_many`, as 0-1 sRGB clipped into the gamut, for (n, 3) OKLab."""
    linear = np.clip((np.asarray(lab, dtype=np.float64) @ _FROM_LAB.T) ** 3 @ _FROM_LMS.T, 0, 1)
    encoded = np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055)
    return np.asarray(np.clip(encoded, 0.0, 1.0))


@lru_cache(maxsize=4096)
def oklab(colour: Rgb) -> tuple[float, float, float]:
    lightness, a, b = oklab_many(np.array([[colour.red, colour.green, colour.blue]]))[0]
    return float(lightness), float(a), float(b)


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

    def heaviest(self, usage: str) -> Rgb | None:
        """The colour used most in one way (`background`), near-duplicates merged."""
        used = [swatch for swatch in self.swatches if swatch.usage[usage] > 0]
        return max(used, key=lambda swatch: swatch.usage[usage]).colour if used else None

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


# Roles a custom property's name can give its colour, in the order they are handed out.
HINT_ROLES = ("background", "text", "primary", "secondary", "accent")
_BRAND_ROLES = ("primary", "secondary", "accent")
# The role words of custom property names. `brand` is not one: `--brand-paper` is the brand's
# paper (a background), `--brand-accent` its accent; `--color-brand` alone names no role.
_ROLE_WORDS = {
    "background": "background",
    "bg": "background",
    "paper": "background",
    "surface": "background",
    "canvas": "background",
    "backdrop": "background",
    "text": "text",
    "ink": "text",
    "foreground": "text",
    "fg": "text",
    "primary": "primary",
    "secondary": "secondary",
    "accent": "accent",
    "highlight": "accent",
}
# Words that scope a property to one component (`--button-bg`): its background or text is not
# the page's, so such a name only gives a brand role (`--button-primary`).
_COMPONENT_WORDS = {"button", "btn", "cta", "link", "nav", "card", "header", "footer", "badge"}


def role_hint(property_name: str) -> str | None:
    """The role a custom property's name gives its colour, from the name's role word:
    `--brand-accent` accent, `--brand-paper` background, `--brand-ink` text, `--color-primary`
    primary. Surface and ink words win over rank words (`--bg-primary` is a background,
    `--text-primary` the main text colour); words after `on` describe what the colour sits on
    (`--on-primary` is no primary); `brand` alone names no role."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", property_name)  # camelCase names
    words = [word for word in re.split(r"[^a-z0-9]+", spaced.lower()) if word]
    if "on" in words:
        words = words[: words.index("on")]
    roles = [_ROLE_WORDS[word] for word in words if word in _ROLE_WORDS]
    if _COMPONENT_WORDS.intersection(words):
        roles = [role for role in roles if role in _BRAND_ROLES] or []
    for kinds in (("background", "text"), ("accent",), ("primary", "secondary")):
        found = [role for role in roles if role in kinds]
        if found:
            return found[-1]
    return None


def _assign_roles(swatches: list[Swatch]) -> dict[int, str]:
    """Roles named by custom properties first (`--brand-paper` background, `--brand-accent`
    accent), then background and text by where colours are used, then the missing brand roles by
    chroma and use on buttons, links and the logo; the rest neutral or supporting."""
    roles: dict[int, str] = {}
    free = list(swatches)

    def take(role: str, candidates: list[Swatch], score: Callable[[Swatch], Any]) -> None:
        if not candidates:
            return
        best = max(candidates, key=score)
        roles[id(best)] = role
        free.remove(best)

    for role in HINT_ROLES:
        # Of two colours named for one role (`--surface`, `--surface-raised`), the one used
        # most in that role; for brand roles the heavier.

        def by_use(swatch: Swatch, role: str = role) -> tuple[float, float]:
            used = swatch.usage[role] if role in ("background", "text") else 0.0
            return used, swatch.weight

        take(role, [s for s in free if role in s.hints], by_use)
    if "background" not in roles.values():
        take(
            "background",
            [s for s in free if s.usage["background"] > 0],
            lambda s: s.usage["background"],
        )
    if "text" not in roles.values():
        take("text", [s for s in free if s.usage["text"] > 0], lambda s: s.usage["text"])
    brandish = [s for s in free if chroma(s.colour) >= CHROMATIC]

    def brand_score(s: Swatch) -> float:
        return s.weight + 2 * (s.usage["button"] + s.usage["link"] + s.usage["logo"])

    for role in _BRAND_ROLES:
        if role not in roles.values():
            take(role, [s for s in brandish if s in free], brand_score)
    for swatch in free:
        roles[id(swatch)] = "neutral" if chroma(swatch.colour) < CHROMATIC else "supporting"
    return roles


def image_colours(data: bytes, content_type: str | None, count: int = 3) -> list[Rgb]:
    """Dominant colours of a raster image, quantised on a thumbnail (each the most frequent exact
    colour of its cluster, so a flat logo gives its own colours, not blends of its edges), or of
    an SVG's fills (brand images are rasterised now, but media stored before may be SVG)."""
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
    rgba.thumbnail((96, 96), Image.Resampling.NEAREST)
    pixels = np.asarray(rgba)
    opaque_pixels = np.ascontiguousarray(pixels[pixels[..., 3] >= 128][:, :3])
    if not len(opaque_pixels):
        return []
    opaque = Image.fromarray(opaque_pixels.reshape(1, -1, 3), "RGB")
    quantised = opaque.quantize(colors=count + 2, method=Image.Quantize.MEDIANCUT)
    clusters = np.asarray(quantised).reshape(-1)
    wide = opaque_pixels.astype(np.int64)
    packed = (wide[:, 0] << 16) | (wide[:, 1] << 8) | wide[:, 2]
    found: list[tuple[int, Rgb]] = []
    for cluster in np.unique(clusters):
        members, frequencies = np.unique(packed[clusters == cluster], return_counts=True)
        top = int(members[np.argmax(frequencies)])
        found.append((int(frequencies.sum()), Rgb(top >> 16, (top >> 8) & 255, top & 255)))
    return [colour for _, colour in sorted(found, key=lambda item: -item[0])[:count]]


def image_shape(data: bytes) -> tuple[int, int] | None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
