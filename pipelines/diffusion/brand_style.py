"""What a brand style lends a diffusion job: its aesthetic, tone and palette in the prompt's words,
and an init image of its palette's colours."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from pipelines.base import StyleHints
from pipelines.media.colours import COLOURS, parse_hex_colour


def style_prompt(prompt: str, style: StyleHints | None) -> str:
    """The prompt enriched with a brand style's aesthetic, tone and palette, in words."""
    if style is None:
        return prompt
    colours = []
    for text in style.palette:
        rgb = parse_hex_colour(text)
        if rgb is not None:
            colours.append(min(COLOURS, key=lambda name: _distance(COLOURS[name], rgb)))
    parts = [prompt]
    if style.aesthetic:
        parts.append(style.aesthetic)
    if style.tone:
        parts.append(f"{', '.join(style.tone)} mood")
    if colours:
        parts.append(f"colour palette of {', '.join(dict.fromkeys(colours))}")
    return ", ".join(parts)


def _distance(first: Sequence[float], second: Sequence[float]) -> float:
    return sum((a - b) ** 2 for a, b in zip(first, second, strict=True))


def palette_image(palette: Sequence[str], width: int, height: int, seed: int) -> Image.Image:
    """Soft diagonal bands of the palette's colours with a little noise: an init image that
    leads image-to-image towards the brand's colours without drawing anything."""
    import numpy as np

    colours = [c for c in map(parse_hex_colour, palette) if c] or [(0.5, 0.5, 0.5)]
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    position = (x / max(width, 1) + y / max(height, 1)) / 2 * (len(colours) - 1)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, len(colours) - 1)
    blend = (position - low)[..., None]
    table = np.array(colours, np.float32)
    canvas = table[low] * (1 - blend) + table[high] * blend
    canvas += rng.normal(0, 0.04, canvas.shape).astype(np.float32)
    return Image.fromarray((np.clip(canvas, 0, 1) * 255).astype(np.uint8))
