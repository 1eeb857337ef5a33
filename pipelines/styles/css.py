"""A small cascade: CSS rules, `var()` resolution, a last-compound selector matcher and colour
and gradient parsing. Enough to tell which colours and fonts a page really uses, not a browser."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import tinycss2
import tinycss2.color4
from selectolax.lexbor import LexborNode

ROOT_SELECTORS = {":root", "html", "body", "*"}
MAX_VAR_DEPTH = 8
_VAR = re.compile(r"var\(\s*(--[\w-]+)\s*(?:,\s*([^()]*(?:\([^()]*\)[^()]*)*))?\)")
_COMPOUND = re.compile(r"[^\s>+~]+$")


@dataclass(frozen=True)
class Rule:
    selector: str
    declarations: dict[str, str]
    order: int


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


def declarations(tokens: list[tinycss2.ast.Node]) -> dict[str, str]:
    found: dict[str, str] = {}
    for decl in tinycss2.parse_declaration_list(tokens, skip_comments=True, skip_whitespace=True):
        if decl.type == "declaration":
            name = decl.name if decl.name.startswith("--") else decl.lower_name
            found[name] = tinycss2.serialize(decl.value).strip()
    return found


def parse_rules(stylesheets: list[str]) -> tuple[list[Rule], list[dict[str, str]]]:
    """Style rules (media and supports blocks flattened) and `@font-face` declarations."""
    rules: list[Rule] = []
    font_faces: list[dict[str, str]] = []

    def walk(nodes: list[tinycss2.ast.Node]) -> None:
        for node in nodes:
            if node.type == "qualified-rule":
                decls = declarations(node.content)
                for selector in tinycss2.serialize(node.prelude).split(","):
                    rules.append(Rule(selector.strip(), decls, len(rules)))
            elif node.type == "at-rule" and node.content is not None:
                keyword = node.lower_at_keyword
                if keyword == "font-face":
                    font_faces.append(declarations(node.content))
                elif keyword in ("media", "supports", "layer", "document"):
                    walk(tinycss2.parse_rule_list(node.content, True, True))

    for css in stylesheets:
        walk(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True))
    return rules, font_faces


def custom_properties(rules: list[Rule]) -> dict[str, str]:
    """Custom properties by name; root-level definitions win over component-level ones so a
    theme's base values are what `var()` resolves to."""
    found: dict[str, str] = {}
    for rule in sorted(rules, key=lambda rule: rule.selector in ROOT_SELECTORS):
        for name, value in rule.declarations.items():
            if name.startswith("--"):
                found[name] = value
    return found


def resolve_vars(value: str, variables: dict[str, str]) -> str:
    for _ in range(MAX_VAR_DEPTH):
        if "var(" not in value:
            break
        value = _VAR.sub(lambda m: variables.get(m.group(1), m.group(2) or ""), value)
    return value


def selector_matches(selector: str, node: LexborNode) -> bool:
    """Whether the selector's last compound (tag, classes, id, attributes) fits the node;
    ancestors and pseudo-classes are ignored, which overcounts a little and is good enough."""
    if selector in ROOT_SELECTORS:
        return node.tag in ("html", "body")
    found = _COMPOUND.search(selector)
    if not found:
        return False
    compound = re.sub(r"::?[\w-]+(\([^)]*\))?", "", found.group(0))
    if not compound:
        return False
    attributes = node.attributes
    tag = re.match(r"^[a-zA-Z][\w-]*", compound)
    if tag and tag.group(0).lower() != node.tag:
        return False
    classes = set((attributes.get("class") or "").split())
    for css_class in re.findall(r"\.((?:\\.|[\w-])+)", compound):
        if css_class.replace("\\", "") not in classes:
            return False
    for element_id in re.findall(r"#([\w-]+)", compound):
        if attributes.get("id") != element_id:
            return False
    for name, expected in re.findall(r"\[([\w-]+)(?:[~|^$*]?=\"?([^\]\"]*)\"?)?\]", compound):
        if name not in attributes or (expected and attributes.get(name) != expected):
            return False
    return True


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
