"""What a prompt asks to be drawn: its subjects (nouns with their colour, count and size words),
how they stand to each other ("on", "under", "beside", "in front of", "against", "in the sky",
"holding"), and the place around them ("in a living room", "against a brick wall").

There is no part-of-speech tagger here: a prompt is cut into noun phrases at punctuation, at
"and", at relation words and at verbs ("sleeping", "leaning"); a phrase's last word (or its last
two or three, when those name a glyph or a place: "hot air balloon", "living room") is what it
names, and the words before it describe it. Places come from `PLACES` and the landscape scenes of
`vocabulary.py`; a noun that is neither is a subject, found in the glyph set by name, keyword or
meaning (`glyphs`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipelines.builtin import vocabulary as vocab
from pipelines.builtin.glyphs import Found, glyph_set
from pipelines.media.colours import COLOURS, RGB

# Indoor and built places, painted by `places.py`; landscapes are the vocabulary's scenes.
PLACES: dict[str, str] = {
    **dict.fromkeys(
        (
            "room",
            "living room",
            "bedroom",
            "lounge",
            "office",
            "studio",
            "library",
            "classroom",
            "interior",
            "home",
            "hallway",
            "apartment",
        ),
        "room",
    ),
    **dict.fromkeys(("kitchen", "kitchen counter", "counter", "countertop", "cafe"), "kitchen"),
    **dict.fromkeys(("brick wall", "wall", "bricks", "alley"), "brick wall"),
    **dict.fromkeys(("street", "road", "sidewalk", "pavement", "avenue", "crosswalk"), "street"),
    **dict.fromkeys(("table", "desk", "tabletop", "kitchen table", "dining table"), "table"),
}
# Landscape words that are also places a subject stands in or on.
OUTDOOR_PLACES: dict[str, str] = {
    **dict.fromkeys(("beach", "seaside", "shore", "sand"), "beach"),
    **dict.fromkeys(
        ("park", "garden", "meadow", "field", "lawn", "farm", "grass", "countryside"), "park"
    ),
    **dict.fromkeys(("snow", "winter"), "snow"),
    **dict.fromkeys(("sky", "night sky", "space", "air", "clouds"), "sky"),
}

# Relation phrases, longest first, and the relation each names.
RELATIONS: tuple[tuple[str, str], ...] = (
    ("in front of", "in front of"),
    ("on top of", "on"),
    ("next to", "beside"),
    ("leaning against", "against"),
    ("leaning on", "against"),
    ("in the sky", "in the sky"),
    ("in the air", "in the sky"),
    ("up in the sky", "in the sky"),
    ("against", "against"),
    ("beside", "beside"),
    ("near", "beside"),
    ("by", "beside"),
    ("underneath", "under"),
    ("beneath", "under"),
    ("under", "under"),
    ("below", "under"),
    ("behind", "behind"),
    ("above", "in the sky"),
    ("over", "in the sky"),
    ("on", "on"),
    ("onto", "on"),
    ("upon", "on"),
    ("atop", "on"),
    ("holding", "holding"),
    ("carrying", "holding"),
    ("playing", "holding"),
    ("with", "with"),
    ("wearing", "wearing"),
    ("in", "in"),
    ("inside", "in"),
    ("at", "in"),
    ("of", "of"),
)
# Verbs that put their subject in the sky when nothing else places it.
SKY_VERBS = frozenset({"flying", "floating", "soaring", "hovering", "gliding", "drifting"})
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "single": 1,
    "two": 2,
    "pair": 2,
    "couple": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "few": 3,
    "several": 4,
    "some": 3,
    "many": 5,
    "lots": 5,
}
MAX_COUNT = 6
SIZES = {
    "tiny": 0.55,
    "small": 0.75,
    "little": 0.8,
    "big": 1.25,
    "large": 1.25,
    "huge": 1.5,
    "giant": 1.6,
    "enormous": 1.6,
    "tall": 1.2,
}
# Words before "of" that measure what follows: "a bowl of ramen" draws the ramen.
MEASURES = frozenset(
    {"bowl", "cup", "glass", "plate", "slice", "piece", "bunch", "pile", "stack", "basket", "box"}
)
COLOUR_SHADES = {"light": 0.35, "pale": 0.45, "dark": -0.45, "deep": -0.3, "bright": 0.1}
_SPLIT = re.compile(r"[,;.!?]|\band\b|\bthen\b")
_WORD = re.compile(r"[a-z][a-z'-]*")


@dataclass
class Subject:
    words: str  # what the prompt calls it ("sofa")
    found: Found
    colour_name: str | None = None
    colour: RGB | None = None
    count: int = 1
    size: float = 1.0
    relation: str | None = None  # how it stands to `anchor`, or "in the sky"
    anchor: int | None = None  # index of the subject it relates to

    @property
    def label(self) -> str:
        """How the notes name it: the prompt's word, the glyph it became, its colour."""
        name = self.words
        if not self.found.exact:
            name += f" (as {self.found.entry.label})"
        if self.colour_name:
            name += f" ({self.colour_name})"
        return name


@dataclass
class SceneWords:
    subjects: list[Subject] = field(default_factory=list)
    place: str | None = None  # a key of `places.PAINTERS`, or an outdoor place
    place_words: str | None = None
    place_colour: RGB | None = None
    not_drawn: list[str] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)  # words the palette should not read

    def claim(self, words: list[str]) -> None:
        """Words the subjects and place took, but those of light and mood ("night sky")."""
        self.consumed.update(
            w for w in words if w not in vocab.TIME_WORDS and w not in vocab.MOOD_WORDS
        )


def _shaded(colour: RGB, shade: float) -> RGB:
    if shade >= 0:
        return (
            colour[0] + (1 - colour[0]) * shade,
            colour[1] + (1 - colour[1]) * shade,
            colour[2] + (1 - colour[2]) * shade,
        )
    return (colour[0] * (1 + shade), colour[1] * (1 + shade), colour[2] * (1 + shade))


# Nouns that look like verbs.
_NOT_VERBS = frozenset(
    {
        "building",
        "ring",
        "king",
        "wedding",
        "pudding",
        "dumpling",
        "earring",
        "string",
        "wing",
        "living",
        "dining",
        "fishing",
        "swimming",
        "washing",
    }
)


def _is_verb(word: str) -> bool:
    return len(word) > 4 and word.endswith(("ing", "ed")) and word not in _NOT_VERBS


def _is_descriptive(word: str, style_words: frozenset[str]) -> bool:
    """Words that describe rather than name: moods, times, art styles, picture words."""
    return (
        word in vocab.NON_SUBJECT_WORDS
        or word in style_words
        or vocab.MOOD_WORDS.get(word) is not None
        or vocab.TIME_WORDS.get(word) is not None
        or word in vocab.EXPANSIONS
        or word in ("portrait", "photo", "drawing", "cartoon", "flat", "cute", "old", "young")
    )


@dataclass
class _Phrase:
    words: list[str]
    relation: str | None  # the relation word before it
    verbs: list[str]


def _phrases(clause: str) -> list[_Phrase]:
    """A clause cut into noun phrases at relation words and verbs."""
    words = _WORD.findall(clause)
    phrases: list[_Phrase] = []
    current: list[str] = []
    verbs: list[str] = []
    relation: str | None = None
    index = 0
    while index < len(words):
        matched = None
        for phrase, name in RELATIONS:
            parts = phrase.split()
            if words[index : index + len(parts)] == parts:
                matched = (len(parts), name)
                break
        if matched is not None:
            if current:
                phrases.append(_Phrase(current, relation, verbs))
                current, verbs = [], []
            relation = matched[1]
            if relation == "in the sky" and phrases and matched[0] > 1:
                phrases[-1].verbs.append("in the sky")
                relation = None
            index += matched[0]
            continue
        word = words[index]
        if _is_verb(word):
            verbs.append(word)
            if current:
                phrases.append(_Phrase(current, relation, verbs))
                current, verbs, relation = [], [], None
        else:
            current.append(word)
        index += 1
    if current:
        phrases.append(_Phrase(current, relation, verbs))
    elif verbs and phrases:
        phrases[-1].verbs.extend(verbs)
    return phrases


ANCHORING = frozenset({"on", "under", "beside", "in front of", "against", "behind"})
# After these a landscape word with a glyph is a thing ("under a tree"), not the place.
THING_RELATIONS = frozenset({"under", "beside", "in front of", "behind", "with", "holding"})


def read_scene(prompt: str, style_words: frozenset[str] = frozenset()) -> SceneWords:
    """The subjects, their relations and the place a prompt names."""
    scene = SceneWords()
    glyphs = glyph_set()
    text = prompt.lower()
    for time_phrase in vocab.TIME_PHRASES:  # "golden hour" is a light, not a golden thing
        text = text.replace(time_phrase, " ")
    for clause in _SPLIT.split(text):
        previous: int | None = None  # the last subject of this clause
        for phrase in _phrases(clause):
            words = phrase.words
            head, head_len = _head(words, style_words)
            if head is None:
                continue
            modifiers = words[: len(words) - head_len]
            relation = phrase.relation
            place = PLACES.get(head) or OUTDOOR_PLACES.get(head)
            found: Found | None = None
            if place is None and _scene_word(head) is None:
                found = glyphs.find(head)
            elif relation in THING_RELATIONS and (exact := glyphs.exact(head)) is not None:
                found = Found(exact, True)
            elif place is not None:
                # The first place named is the scene ("in a kitchen", "against a brick wall").
                if scene.place is None:
                    scene.place, scene.place_words = place, head
                    scene.place_colour = _colour(modifiers)[1]
                scene.claim(words)
                continue
            else:
                continue  # a landscape word: the layout and palette read it
            if found is None:
                if head not in scene.not_drawn:
                    scene.not_drawn.append(head)
                continue
            if (
                relation == "of"
                and previous is not None
                and scene.subjects[previous].words in MEASURES
            ):
                scene.subjects.pop(previous)  # "a bowl of ramen": the ramen stands for the bowl
                previous = None
            colour_name, colour = _colour(modifiers)
            count, size = _count_and_size(modifiers, head, head_len)
            subject = Subject(head, found, colour_name, colour, count, size)
            if "in the sky" in phrase.verbs or SKY_VERBS & set(phrase.verbs):
                subject.relation = "in the sky"
            if previous is not None:
                before = scene.subjects[previous]
                if relation in ANCHORING and before.anchor is None:
                    # "a cat on a sofa": the sofa is the cat's anchor.
                    before.relation, before.anchor = relation, len(scene.subjects)
                elif relation in ("holding", "with", "wearing"):
                    subject.relation, subject.anchor = relation, previous
            scene.claim(words)
            scene.subjects.append(subject)
            previous = len(scene.subjects) - 1
    return _deduplicated(scene)


def _deduplicated(scene: SceneWords) -> SceneWords:
    seen: dict[tuple[str, str | None], int] = {}
    kept: list[Subject] = []
    remap: dict[int, int] = {}
    for index, subject in enumerate(scene.subjects):
        key = (subject.found.entry.label, subject.colour_name)
        if key in seen and subject.relation is None:
            kept[seen[key]].count = max(kept[seen[key]].count, subject.count)
            remap[index] = seen[key]
            continue
        seen[key] = len(kept)
        remap[index] = len(kept)
        kept.append(subject)
    for subject in kept:
        if subject.anchor is not None:
            subject.anchor = remap.get(subject.anchor)
            if subject.anchor is not None and kept[subject.anchor] is subject:
                subject.anchor, subject.relation = None, None
    scene.subjects = kept
    return scene


def _scene_word(word: str) -> str | None:
    for form in (word, word[:-1] if word.endswith("s") else word):
        if form in vocab.SCENE_WORDS:
            return vocab.SCENE_WORDS[form]
    return None


def _head(words: list[str], style_words: frozenset[str]) -> tuple[str | None, int]:
    """What a phrase names, and how many of its last words that takes."""
    glyphs = glyph_set()
    for length in (3, 2):
        if len(words) >= length:
            candidate = " ".join(words[-length:])
            if candidate in PLACES or candidate in OUTDOOR_PLACES or glyphs.exact(candidate):
                return candidate, length
    content = [
        w
        for w in words
        if w not in NUMBERS and w not in SIZES and w not in COLOURS and w not in COLOUR_SHADES
    ]
    if not content:
        return None, 0
    last = content[-1]
    if _is_descriptive(last, style_words) and not (last in PLACES or last in OUTDOOR_PLACES):
        return None, 0
    return last, len(words) - words.index(last)


def _colour(modifiers: list[str]) -> tuple[str | None, RGB | None]:
    for index, word in enumerate(modifiers):
        if word in COLOURS:
            shade = modifiers[index - 1] if index else ""
            if shade in COLOUR_SHADES:
                return f"{shade} {word}", _shaded(COLOURS[word], COLOUR_SHADES[shade])
            return word, COLOURS[word]
    return None, None


def _count_and_size(modifiers: list[str], head: str, head_len: int) -> tuple[int, float]:
    count = next((NUMBERS[w] for w in modifiers if w in NUMBERS and w not in ("a", "an")), 0)
    if count == 0:
        plural = head_len == 1 and head.endswith("s") and not head.endswith("ss")
        count = 3 if plural and glyph_set().exact(head[:-1]) is not None else 1
    size = 1.0
    for word in modifiers:
        size *= SIZES.get(word, 1.0)
    return min(count, MAX_COUNT), size
