"""The text-only path's small cascade: CSS rules, `var()` resolution, a last-compound selector
matcher and the inherited font properties of a node. Enough to tell which colours and fonts a page
means when no browser renders it; the rendered path asks the browser instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tinycss2
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


INHERITED_FONT_PROPERTIES = ("font-family", "font-weight", "text-transform")


_FONT_SIZE = (
    r"(?:\d[\d.]*(?:px|r?em|%|pt|vw|vh|vmin|vmax|ch|ex)"
    r"|(?:xx?-)?(?:small|medium|large)|larger|smaller)(?:/\S+)?"
)
_FONT_SHORTHAND = re.compile(rf"^(.*?)(?:^|\s){_FONT_SIZE}\s+(.+)$")


def _font_shorthand(value: str) -> dict[str, str]:
    """`font: 700 2rem/1.2 "Inter", sans-serif` -> weight and family."""
    found = _FONT_SHORTHAND.match(value.strip())
    if not found:
        return {}
    result = {"font-family": found.group(2)}
    weight = re.search(r"\b(bold|bolder|lighter|[1-9]00)\b", found.group(1))
    if weight:
        result["font-weight"] = weight.group(1)
    return result


def computed(node: LexborNode, rules: list[Rule], variables: dict[str, str]) -> dict[str, str]:
    """The inherited font properties of a node: ancestors first, then matching rules in
    specificity-then-source order, then its own `style=` attribute."""
    chain: list[LexborNode] = []
    current: LexborNode | None = node
    while current is not None and current.tag not in ("-undef", "#document", None):
        chain.append(current)
        current = current.parent
    values: dict[str, str] = {}
    for element in reversed(chain):
        matched = [rule for rule in rules if selector_matches(rule.selector, element)]
        matched.sort(key=lambda rule: (_specificity(rule.selector), rule.order))
        layers = [rule.declarations for rule in matched]
        layers.append(declarations_of_attribute(element))
        for decls in layers:
            if "font" in decls:
                values.update(_font_shorthand(resolve_vars(decls["font"], variables)))
            for name in INHERITED_FONT_PROPERTIES:
                if name in decls:
                    values[name] = resolve_vars(decls[name], variables)
    return values


def declared(node: LexborNode, rules: list[Rule], name: str, variables: dict[str, str]) -> str:
    """The value the cascade gives one (not inherited) property of a node: its matching rules
    in specificity-then-source order, then its own `style=` attribute; "" when none sets it."""
    matched = [rule for rule in rules if selector_matches(rule.selector, node)]
    matched.sort(key=lambda rule: (_specificity(rule.selector), rule.order))
    value = ""
    for decls in [*(rule.declarations for rule in matched), declarations_of_attribute(node)]:
        if name in decls:
            value = resolve_vars(decls[name], variables)
    return value


def declarations_of_attribute(node: LexborNode) -> dict[str, str]:
    style = node.attributes.get("style") or ""
    return declarations(tinycss2.parse_component_value_list(style)) if style else {}


def _specificity(selector: str) -> tuple[int, int, int]:
    return (
        selector.count("#"),
        selector.count(".") + selector.count("[") + selector.count(":"),
        len(re.findall(r"(?:^|[\s>+~])[a-zA-Z]", selector)),
    )
