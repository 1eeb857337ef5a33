"""What a prompt asks for: the words of the vocabulary it uses, and the layout they call for."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.builtin import vocabulary as vocab
from pipelines.media.colours import COLOURS, RGB

GROUND_SCENES = ("mountains", "hills", "desert", "forest", "city")  # far to near

_WORD = re.compile(r"[a-z]+")


def _lookup(word: str, table: dict[str, str]) -> str | None:
    candidates = [word]
    if word.endswith("ies"):
        candidates.append(word[:-3] + "y")
    if word.endswith("es"):
        candidates.append(word[:-2])
    if word.endswith("s"):
        candidates.append(word[:-1])
    return next((table[c] for c in candidates if c in table), None)


@dataclass
class PromptTerms:
    colours: list[RGB]
    time: str | None
    scenes: list[str]
    moods: list[str]
    features: set[str]
    recognised: list[str]
    unknown: list[str]


def parse_prompt(text: str) -> PromptTerms:
    """Pick out the words of `vocabulary` in a prompt, in order of appearance."""
    lowered = text.lower()
    terms = PromptTerms([], None, [], [], set(), [], [])
    for phrase, phrase_time in vocab.TIME_PHRASES.items():
        if phrase in lowered and terms.time is None:
            terms.time = phrase_time
            terms.recognised.append(phrase)
    colour_names = {name: name for name in COLOURS}
    for original in _WORD.findall(lowered):
        for word in vocab.EXPANSIONS.get(original, (original,)):
            time = _lookup(word, vocab.TIME_WORDS)
            scene = _lookup(word, vocab.SCENE_WORDS)
            mood = _lookup(word, vocab.MOOD_WORDS)
            colour = _lookup(word, colour_names)
            feature = _lookup(word, vocab.FEATURE_WORDS)
            if time and terms.time is None:
                terms.time = time
            if scene and scene not in terms.scenes:
                terms.scenes.append(scene)
            if mood and mood not in terms.moods:
                terms.moods.append(mood)
            if colour and COLOURS[colour] not in terms.colours:
                terms.colours.append(COLOURS[colour])
            if feature:
                terms.features.add(feature)
            if time or scene or mood or colour or feature:
                terms.recognised.append(word)
            else:
                terms.unknown.append(word)
    return terms


def undrawable_words(terms: PromptTerms, also_known: frozenset[str] = frozenset()) -> list[str]:
    """The prompt's words that name something the painter cannot draw: the unknown words but
    the ones that name no subject and those in `also_known` (art-style words), each once."""
    known = vocab.NON_SUBJECT_WORDS | also_known
    found: list[str] = []
    for word in terms.unknown:
        if len(word) > 2 and word not in known and word not in found:
            found.append(word)
    return found


def layout_of(terms: PromptTerms) -> str:
    """`space`, `sea`, `sky` or `land`: what the picture is built around."""
    ground = [s for s in terms.scenes if s in GROUND_SCENES]
    if "sea" in terms.scenes:
        return "sea"
    if "space" in terms.scenes and not ground:
        return "space"
    if "sky" in terms.scenes and not ground:
        return "sky"
    return "land"
