"""Colours by name and by hex code.

The colour words prompts use (the builtin generator and editor read them; the diffusion pipelines
name a brand palette's colours with them) as sRGB triples in [0, 1], and the `#rrggbb` codes of
brand palettes.
"""

from __future__ import annotations

RGB = tuple[float, float, float]

COLOURS: dict[str, RGB] = {
    "red": (0.86, 0.12, 0.12),
    "crimson": (0.75, 0.05, 0.2),
    "scarlet": (0.95, 0.2, 0.1),
    "ruby": (0.7, 0.05, 0.2),
    "maroon": (0.45, 0.05, 0.1),
    "burgundy": (0.5, 0.05, 0.15),
    "orange": (1.0, 0.5, 0.1),
    "amber": (1.0, 0.7, 0.15),
    "gold": (1.0, 0.78, 0.3),
    "golden": (1.0, 0.78, 0.3),
    "yellow": (1.0, 0.9, 0.2),
    "lime": (0.6, 0.9, 0.2),
    "green": (0.2, 0.65, 0.25),
    "emerald": (0.1, 0.6, 0.4),
    "olive": (0.45, 0.5, 0.2),
    "mint": (0.6, 0.95, 0.8),
    "teal": (0.05, 0.55, 0.55),
    "turquoise": (0.2, 0.8, 0.75),
    "cyan": (0.1, 0.85, 0.95),
    "aqua": (0.2, 0.9, 0.9),
    "blue": (0.12, 0.3, 0.9),
    "azure": (0.2, 0.55, 1.0),
    "navy": (0.05, 0.08, 0.35),
    "cobalt": (0.0, 0.28, 0.67),
    "sapphire": (0.06, 0.32, 0.73),
    "indigo": (0.3, 0.1, 0.6),
    "violet": (0.55, 0.3, 0.85),
    "purple": (0.5, 0.15, 0.65),
    "lavender": (0.75, 0.65, 0.95),
    "lilac": (0.8, 0.65, 0.9),
    "magenta": (0.9, 0.1, 0.7),
    "fuchsia": (0.95, 0.2, 0.75),
    "pink": (1.0, 0.55, 0.72),
    "rose": (0.95, 0.4, 0.55),
    "coral": (1.0, 0.5, 0.4),
    "salmon": (0.98, 0.55, 0.45),
    "peach": (1.0, 0.75, 0.6),
    "brown": (0.45, 0.28, 0.15),
    "sepia": (0.55, 0.42, 0.3),
    "bronze": (0.7, 0.5, 0.25),
    "copper": (0.75, 0.45, 0.25),
    "rust": (0.7, 0.3, 0.1),
    "silver": (0.75, 0.77, 0.8),
    "grey": (0.5, 0.5, 0.52),
    "gray": (0.5, 0.5, 0.52),
    "black": (0.03, 0.03, 0.04),
    "white": (0.97, 0.97, 0.97),
    "cream": (1.0, 0.96, 0.85),
    "ivory": (1.0, 0.97, 0.88),
    "beige": (0.9, 0.85, 0.72),
}


def parse_hex_colour(text: str) -> RGB | None:
    digits = text.strip().lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    if len(digits) != 6:
        return None
    try:
        value = int(digits, 16)
    except ValueError:
        return None
    return ((value >> 16) / 255.0, ((value >> 8) & 255) / 255.0, (value & 255) / 255.0)
