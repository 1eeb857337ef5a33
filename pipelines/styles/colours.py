"""Colours and gradients as CSS writes them (hex, names, `rgb()`, `hsl()`, `*-gradient()`), parsed
with tinycss2: what the text-only path reads from stylesheets and the rendered path from the
browser's computed values."""

from __future__ import annotations

import math
from dataclasses import dataclass

import tinycss2
import tinycss2.color4


@dataclass(frozen=True)
class Rgb:
    red: int
    green: int
    blue: int

    @property
    def hex(self) -> str:
        return f"#{self.red:02X}{self.green:02X}{self.blue:02X}"


@dataclass(frozen=True)
class Gradient:
    subtype: str
    stops: tuple[tuple[Rgb, float | None], ...]
    angle_deg: float | None


def _channel(value: float) -> int:
    return max(0, min(255, round(value * 255)))


def parse_colour(token: tinycss2.ast.Node) -> Rgb | None:
    """A solid, mostly opaque colour; transparent and faint colours carry no brand."""
    if token.type not in ("hash", "ident", "function"):
        return None
    parsed = tinycss2.color4.parse_color(token)
    if parsed is None or isinstance(parsed, str) or parsed.alpha < 0.5:
        return None
    try:
        red, green, blue = parsed.to("srgb").coordinates
    except NotImplementedError:  # spaces tinycss2 cannot convert (lab, oklch, ...)
        return None
    return Rgb(_channel(red), _channel(green), _channel(blue))


# What a page shows where it paints no background of its own: the browser's canvas.
CANVAS = Rgb(255, 255, 255)


def colours_in(value: str) -> list[Rgb]:
    found = []
    for token in tinycss2.parse_component_value_list(value, skip_comments=True):
        colour = parse_colour(token)
        if colour is not None:
            found.append(colour)
    return found


def _angle(token: tinycss2.ast.Node) -> float | None:
    if token.type != "dimension":
        return None
    factor = {"deg": 1.0, "turn": 360.0, "rad": 180.0 / math.pi, "grad": 0.9}.get(token.lower_unit)
    return None if factor is None else float(token.value) * factor


_SIDES = {"top": 0.0, "right": 90.0, "bottom": 180.0, "left": 270.0}


def _side_angle(words: list[str]) -> float | None:
    angles = [_SIDES[word] for word in words if word in _SIDES]
    if not angles:
        return None
    if len(angles) == 2 and {angles[0], angles[1]} == {0.0, 270.0}:
        return 315.0
    return sum(angles) / len(angles)


def gradients_in(value: str) -> list[Gradient]:
    found = []
    for token in tinycss2.parse_component_value_list(value, skip_comments=True):
        if token.type != "function" or not token.lower_name.endswith("-gradient"):
            continue
        subtype = "radial" if "radial" in token.lower_name else "linear"
        gradient = _gradient(subtype, token.arguments)
        if gradient is not None:
            found.append(gradient)
    return found


def _gradient(subtype: str, arguments: list[tinycss2.ast.Node]) -> Gradient | None:
    groups: list[list[tinycss2.ast.Node]] = [[]]
    for argument in arguments:
        if argument.type == "literal" and argument.value == ",":
            groups.append([])
        elif argument.type not in ("whitespace", "comment"):
            groups[-1].append(argument)
    angle: float | None = 180.0 if subtype == "linear" else None
    stops: list[tuple[Rgb, float | None]] = []
    for index, group in enumerate(groups):
        colour = next((c for c in map(parse_colour, group) if c is not None), None)
        if colour is None:
            if index == 0 and subtype == "linear":
                words = [t.lower_value for t in group if t.type == "ident"]
                angle = next((a for a in map(_angle, group) if a is not None), None)
                angle = angle if angle is not None else _side_angle(words)
            continue
        position = next((float(t.value) for t in group if t.type == "percentage"), None)
        stops.append((colour, max(0.0, min(100.0, position)) if position is not None else None))
    if len(stops) < 2:
        return None
    return Gradient(subtype, tuple(stops[:6]), angle)
