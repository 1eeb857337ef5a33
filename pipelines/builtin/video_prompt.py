"""What a video prompt asks for: camera moves, their speed and ambient effects.

Both video pipelines read prompts through here. Moves are matched as phrases, most specific first
("zoom out" before a bare "zoom"), and a matched phrase is blanked so it counts once. The negative
prompt removes moves and effects by family: "zoom" removes every move that changes the framing's
scale (a viewer calls a dolly a zoom too), "camera motion" removes them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (move, pattern), most specific first.
MOVE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("static", r"\bstatic\b|\bstill camera\b|\blocked[- ]off\b|\btripod\b|\bno camera mo\w+"),
    (
        "push_past",
        r"\bpush\w* (?:past|through)\b|\bfl(?:y|ies|ying|ew) (?:past|through|by)\b"
        r"|\bfly-?through\b|\bmov\w* (?:past|through)\b",
    ),
    ("zoom_out", r"\bzoom\w*[ -]?(?:out|back|away)\b"),
    ("zoom_in", r"\bzoom\w*[ -]?(?:in|into|closer)\b|\bzoom\w*"),
    (
        "dolly_out",
        r"\bdolly\w* (?:out|back)\b|\bpull\w* (?:back|out|away)\b|\bpullback\b"
        r"|\bmov\w* (?:back|away|backwards?)\b|\bretreat\w*|\breveal\w*",
    ),
    (
        "dolly_in",
        r"\bdolly\w*(?: in| forward)?\b|\bpush\w*[ -]?(?:in|forward|closer)\b"
        r"|\bmov\w* (?:in|closer|forward|towards?)\b|\bapproach\w*|\bcloser\b",
    ),
    ("pan_left", r"\b(?:whip[ -])?(?:pan|whip|swipe|slide)\w* (?:to the )?left\b"),
    (
        "pan_right",
        r"\b(?:whip[ -])?(?:pan|whip|swipe|slide)(?:s|ning|ned|ping|ped|ing)?\b"
        r"(?: (?:to the )?right)?",
    ),
    ("tilt_down", r"\b(?:tilt|crane|pedestal)\w* down\b"),
    ("tilt_up", r"\btilt\w*(?: up)?\b|\b(?:crane|pedestal)\w* up\b"),
    (
        "orbit_left",
        r"\b(?:orbit|arc|circl|rotat)\w*(?: around)? (?:to the )?left\b|\bcounter-?clockwise\b",
    ),
    ("orbit_right", r"\borbit\w*|\barc(?:s|ing)?\b|\b(?:circl|rotat)\w* around\b|\bparallax\b"),
    ("drift", r"\bdrift\w*|\bfloat\w*|\bglid\w*|\bhandheld\b|\bsway\w*"),
)

SCALING_MOVES = ("zoom_in", "zoom_out", "dolly_in", "dolly_out", "push_past")
ALL_MOVES = tuple(move for move, _ in MOVE_PATTERNS)
# Words of a negative prompt and the moves each one removes.
MOVE_FAMILIES: dict[str, tuple[str, ...]] = {
    "zoom": SCALING_MOVES,
    "dolly": ("dolly_in", "dolly_out", "push_past"),
    "push": ("dolly_in", "push_past"),
    "pull": ("dolly_out",),
    "pan": ("pan_left", "pan_right"),
    "whip": ("pan_left", "pan_right"),
    "tilt": ("tilt_up", "tilt_down"),
    "orbit": ("orbit_left", "orbit_right"),
    "parallax": ("orbit_left", "orbit_right"),
    "rotation": ("orbit_left", "orbit_right"),
    "drift": ("drift",),
    "handheld": ("drift",),
    "shake": ("drift",),
    "sway": ("drift",),
    "camera motion": ALL_MOVES,
    "camera movement": ALL_MOVES,
    "camera move": ALL_MOVES,
    "moving camera": ALL_MOVES,
    "motion": ALL_MOVES,
    "movement": ALL_MOVES,
}

# Ambient effects and the words that call for each.
EFFECT_WORDS: dict[str, tuple[str, ...]] = {
    "snow": ("snow", "snowy", "snowfall", "snowflakes", "blizzard", "winter"),
    "rain": ("rain", "rainy", "raining", "rainfall", "drizzle", "downpour", "storm", "stormy"),
    "embers": ("embers", "sparks", "fire", "campfire", "bonfire", "fireplace", "burning"),
    "fireflies": ("fireflies", "firefly", "glowworms"),
    "dust": ("dust", "dusty", "motes", "pollen", "haze", "hazy", "particles", "magic", "sunbeams"),
    "petals": ("petals", "blossom", "blossoms", "sakura", "cherry", "leaves", "autumn", "fall"),
    "flicker": (
        "flicker", "flickering", "candle", "candles", "candlelight", "fire", "firelight",
        "campfire", "bonfire", "fireplace", "lantern", "lanterns", "torch", "torches", "neon",
    ),
    "shimmer": (
        "water", "lake", "sea", "ocean", "river", "pond", "reflection", "reflections",
        "waves", "ripples", "rippling", "shimmer", "shimmering", "stream", "harbor", "bay",
        "beach", "shore", "lagoon", "waterfront",
    ),
    "clouds": ("cloud", "clouds", "cloudy", "sky", "skies", "overcast", "storm", "stormy", "windy"),
}  # fmt: skip
PARTICLE_EFFECTS = ("snow", "rain", "embers", "fireflies", "dust", "petals")
# At most this many particle kinds at once: more reads as clutter.
MAX_PARTICLE_KINDS = 2
EFFECT_FAMILIES: dict[str, tuple[str, ...]] = {
    "particles": PARTICLE_EFFECTS,
    "effects": tuple(EFFECT_WORDS),
    "weather": ("snow", "rain", "clouds"),
    "light": ("flicker",),
    "water": ("shimmer",),
    "ripples": ("shimmer",),
    "reflections": ("shimmer",),
}

SPEED_WORDS: dict[str, float] = {
    "very slow": 0.4,
    "very slowly": 0.4,
    "slow": 0.6,
    "slowly": 0.6,
    "gentle": 0.65,
    "gently": 0.65,
    "subtle": 0.6,
    "calm": 0.75,
    "soft": 0.75,
    "steady": 0.9,
    "fast": 1.6,
    "quick": 1.5,
    "quickly": 1.5,
    "rapid": 1.7,
    "rapidly": 1.7,
    "swift": 1.5,
    "dramatic": 1.4,
    "very fast": 2.0,
}

_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class VideoDirections:
    """The moves (in prompt order), their speed factor, and the effects to render."""

    moves: tuple[str, ...]
    speed: float
    effects: tuple[str, ...]
    removed: tuple[str, ...] = ()  # moves and effects the negative prompt took out

    def describe(self) -> str:
        moves = ", ".join(move.replace("_", " ") for move in self.moves) or "static camera"
        pace = "slow" if self.speed < 0.85 else "fast" if self.speed > 1.2 else "steady"
        effects = ", ".join(self.effects) or "none"
        text = f"camera: {moves} ({pace}); effects: {effects}"
        if self.removed:
            removed = ", ".join(item.replace("_", " ") for item in self.removed)
            text += f"; removed by the negative prompt: {removed}"
        return text


def find_moves(text: str) -> list[str]:
    """Camera moves named in `text`, in order of appearance, each once."""
    remaining = text.lower()
    found: list[tuple[int, str]] = []
    for move, pattern in MOVE_PATTERNS:
        for match in re.finditer(pattern, remaining):
            found.append((match.start(), move))
            span = match.end() - match.start()
            remaining = remaining[: match.start()] + " " * span + remaining[match.end() :]
    ordered: list[str] = []
    for _, move in sorted(found):
        if move not in ordered:
            ordered.append(move)
    return ordered


def find_speed(text: str) -> float:
    """The pace the prompt asks for; the strongest word wins, two-word phrases first."""
    lowered = " ".join(_WORD.findall(text.lower()))
    for phrase in ("very slow", "very slowly", "very fast"):
        if re.search(rf"\b{phrase}\b", lowered):
            return SPEED_WORDS[phrase]
    factors = [SPEED_WORDS[word] for word in lowered.split() if word in SPEED_WORDS]
    if not factors:
        return 1.0
    return max(factors, key=lambda factor: abs(factor - 1.0))


def find_effects(text: str) -> list[str]:
    words = set(_WORD.findall(text.lower()))
    effects = [effect for effect, triggers in EFFECT_WORDS.items() if words & set(triggers)]
    particles = [effect for effect in effects if effect in PARTICLE_EFFECTS]
    extra = particles[MAX_PARTICLE_KINDS:]
    return [effect for effect in effects if effect not in extra]


def removed_by(negative_prompt: str) -> tuple[set[str], set[str]]:
    """The moves and the effects a negative prompt names."""
    lowered = " ".join(_WORD.findall(negative_prompt.lower()))
    words = set(lowered.split())
    moves: set[str] = set(find_moves(negative_prompt))
    for name, family in MOVE_FAMILIES.items():
        if re.search(rf"\b{name}\b", lowered):
            moves.update(family)
    effects: set[str] = set()
    for effect, triggers in EFFECT_WORDS.items():
        if effect in words or words & set(triggers):
            effects.add(effect)
    for name, family in EFFECT_FAMILIES.items():
        if name in words:
            effects.update(family)
    return moves, effects


def parse_directions(
    prompt: str, negative_prompt: str | None = None, default_moves: tuple[str, ...] = ()
) -> VideoDirections:
    """Read moves, speed and effects from `prompt`, less what `negative_prompt` names.

    When no move is left, the first of `default_moves` that the negative prompt allows is used;
    with none allowed the camera stays still.
    """
    banned_moves, banned_effects = removed_by(negative_prompt or "")
    asked_moves = find_moves(prompt)
    moves = [move for move in asked_moves if move not in banned_moves]
    if not moves and "static" not in asked_moves:
        moves = [move for move in default_moves if move not in banned_moves][:1]
    moves = [move for move in moves if move != "static"]
    asked_effects = find_effects(prompt)
    effects = [effect for effect in asked_effects if effect not in banned_effects]
    removed = [item for item in (*asked_moves, *asked_effects) if item not in (*moves, *effects)]
    removed = [item for item in removed if item != "static"]
    return VideoDirections(
        moves=tuple(moves), speed=find_speed(prompt), effects=tuple(effects), removed=tuple(removed)
    )
