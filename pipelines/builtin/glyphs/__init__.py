"""The builtin painter's drawn subjects: flat vector glyphs found by name, keyword or meaning.

The set is Fluent Emoji Flat (MIT, Microsoft; see NOTICE and LICENSE-fluent-emoji here), the
glyphs a prompt can name as a subject (about 1,300 of its 3,174: no flags, symbols, hand signs or
skin-tone copies), with emojilib's keywords (MIT), each glyph's fill colours by area, and each
description embedded with the project's MiniLM, all made by `tools/glyphs.py`. A few subjects the
set lacks are drawn here (`DRAWN`), and a few jobs are a person holding a thing (`COMPOSITES`).

A word finds a glyph exactly (its name, its last word, or a keyword) or by meaning: the word's
MiniLM embedding against the descriptions', accepted at `MEANING_THRESHOLD` or closer.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from models.once import Once
from pipelines.builtin.imaging import Float
from pipelines.media.colours import RGB
from pipelines.styles.embeddings import embed_texts
from pipelines.styles.palette import oklab_many, srgb_from_oklab

FOLDER = Path(__file__).resolve().parent
# Bumped when `describe` changes, so stale embeddings are never read against new descriptions.
DESCRIPTIONS_VERSION = 1
VIEW_BOX = 32
# Cosine similarity of a word's embedding to a glyph description's at which the glyph stands for
# the word. Chosen by looking at the nearest glyphs of a few hundred words: at 0.55 "sofa" finds
# the couch, "puppy" the dog and "automobile" the car, while "report", "freedom" and "quarterly"
# find nothing; below 0.5 unrelated objects start to match.
MEANING_THRESHOLD = 0.55
# The categories' order when a keyword names glyphs in several: the thing before its face or sign.
CATEGORY_ORDER = (
    "Animals & Nature",
    "Food & Drink",
    "Travel & Places",
    "Objects",
    "Activities",
    "People & Body",
    "Smileys & Emotion",
    "Drawn",
)


def describe(name: str, keywords: list[str] | tuple[str, ...]) -> str:
    """The text a glyph is embedded as: its name, then its keywords."""
    label = name.replace("-", " ")
    extra = [k for k in keywords if k != label]
    return f"{label}: {', '.join(extra)}" if extra else label


@dataclass(frozen=True)
class Glyph:
    name: str
    category: str
    keywords: tuple[str, ...]
    body: str  # SVG markup inside a 32 x 32 view box
    fills: tuple[tuple[str, float], ...]  # flat fill colours, by share of the drawn area

    @property
    def label(self) -> str:
        return self.name.replace("-", " ")


@dataclass(frozen=True)
class Composite:
    """A subject drawn as one glyph holding another ("fisherman": a man with a fishing pole)."""

    name: str
    keywords: tuple[str, ...]
    holder: str
    held: str

    @property
    def label(self) -> str:
        return self.name


Entry = Glyph | Composite


@dataclass(frozen=True)
class Found:
    entry: Entry
    exact: bool  # False: matched by meaning


# Subjects people ask for that the set has no glyph for, drawn here in its flat style.
DRAWN = (
    Glyph(
        "hot-air-balloon",
        "Drawn",
        ("hot air balloon", "balloon ride", "montgolfier", "aerostat"),
        '<path fill="#f8312f" d="M16 2C9.4 2 5 6.6 5 12.2c0 4.6 3.4 8.3 7.6 11.3h6.8C23.6 20.5 '
        '27 16.8 27 12.2C27 6.6 22.6 2 16 2"/><path fill="#ffb02e" d="M16 2c-3 0-5.2 4.6-5.2 '
        '10.2c0 4.6 1.3 8.3 2.6 11.3h5.2c1.3-3 2.6-6.7 2.6-11.3C21.2 6.6 19 2 16 2"/><path '
        'fill="#d3d3d3" d="M12.4 23.5h1l.9 2.5h-.8zm7.2 0h-1l-.9 2.5h.8z"/><path fill="#a56953" '
        'd="M12.5 26h7l-.6 4.2c-.1.5-.5.8-1 .8h-3.8c-.5 0-.9-.3-1-.8z"/><path fill="#6d4534" '
        'd="M12.3 25.6h7.4v1.2h-7.4z"/>',
        (("#f8312f", 0.55), ("#ffb02e", 0.3), ("#a56953", 0.08)),
    ),
)

# People by their work, drawn as a person holding the work's tool.
COMPOSITES = (
    Composite(
        "fisherman",
        ("fisher", "angler", "fishing", "person fishing"),
        "man-standing",
        "fishing-pole",
    ),
    Composite("fisherwoman", ("woman fishing",), "woman-standing", "fishing-pole"),
    Composite("musician", ("guitarist", "guitar player"), "person-standing", "guitar"),
    Composite("violinist", ("violin player",), "person-standing", "violin"),
    Composite("photographer", ("camera person",), "person-standing", "camera"),
    Composite("gardener", ("gardening",), "farmer", "potted-plant"),
    Composite("baker", ("bakery",), "cook", "bread"),
    Composite("barista", ("coffee maker",), "person-standing", "hot-beverage"),
    Composite("waiter", ("waitress", "server"), "person-standing", "bottle-with-popping-cork"),
    Composite("painter", ("house painter", "decorator"), "artist", "paintbrush"),
    Composite("reader", ("person reading", "bookworm"), "person-standing", "open-book"),
    Composite("tennis player", ("tennis",), "person-standing", "tennis"),
    Composite("footballer", ("soccer player", "football player"), "person-standing", "soccer-ball"),
    Composite("hiker", ("hiking", "backpacker"), "person-walking", "backpack"),
)


# Everyday words whose keyword match is a poor picture of them ("doctor" is a keyword of the
# hospital, "car" of the tram car).
PREFERRED = {
    "car": "automobile",
    "plane": "airplane",
    "aeroplane": "airplane",
    "jet": "airplane",
    "tree": "deciduous-tree",
    "hat": "top-hat",
    "bird": "bird",
    "flower": "tulip",
    "house": "house",
    "boat": "sailboat",
    "doctor": "health-worker",
    "nurse": "health-worker",
    "puppy": "dog",
    "retriever": "dog",
    "labrador": "dog",
    "kitten": "cat",
    "kitty": "cat",
    "cheese": "cheese-wedge",
    "cake": "birthday-cake",
    "mug": "hot-beverage",
    "cup": "hot-beverage",
    "coffee": "hot-beverage",
    "tea": "teacup-without-handle",
    "lamp": "light-bulb",
    "book": "closed-book",
    "person": "person-standing",
    "man": "man-standing",
    "woman": "woman-standing",
    "vase": "amphora",
}


class GlyphSet:
    """Every glyph and composite, with the exact-word table and the description embeddings."""

    def __init__(self, glyphs: list[Glyph], vectors: np.ndarray) -> None:
        self.glyphs = glyphs
        self.by_name = {glyph.name: glyph for glyph in glyphs}
        self.entries: list[Entry] = [*glyphs, *COMPOSITES]
        self.vectors = vectors.astype(np.float32)
        ranked: dict[str, tuple[tuple[int, int, int, int], Entry]] = {}
        for entry in self.entries:
            category = entry.category if isinstance(entry, Glyph) else "People & Body"
            label = entry.label
            # The thing before its face ("dog" before "dog face"), then by category and length.
            tie = (label.endswith(" face"), CATEGORY_ORDER.index(category), len(label))
            for kind, term in (
                (0, label),
                (1, label.split()[-1]),
                *((2, keyword) for keyword in entry.keywords),
            ):
                rank = (kind, *tie)
                if term not in ranked or rank < ranked[term][0]:
                    ranked[term] = (rank, entry)
        self.words = {term: entry for term, (_, entry) in ranked.items()}
        for word, name in PREFERRED.items():
            self.words[word] = self.by_name[name]

    def exact(self, phrase: str) -> Entry | None:
        for form in _singulars(phrase):
            if form in self.words:
                return self.words[form]
        return None

    def find(self, phrase: str) -> Found | None:
        """The glyph a phrase names, exactly or by meaning; None when nothing is close enough."""
        exact = self.exact(phrase)
        if exact is not None:
            return Found(exact, True)
        entry, score = self.nearest(phrase)
        return Found(entry, False) if score >= MEANING_THRESHOLD else None

    def nearest(self, phrase: str) -> tuple[Entry, float]:
        query = _embedded(phrase)
        scores = self.vectors @ query
        best = int(np.argmax(scores))
        return self.entries[best], float(scores[best])


@lru_cache(maxsize=512)
def _embedded(phrase: str) -> np.ndarray:
    return embed_texts([phrase])[0]


def _singulars(phrase: str) -> list[str]:
    forms = [phrase]
    for suffix, replacement in (("ies", "y"), ("ves", "f"), ("es", ""), ("s", "")):
        if phrase.endswith(suffix) and len(phrase) > len(suffix) + 2:
            forms.append(phrase[: -len(suffix)] + replacement)
    return forms


_glyphs: Once[GlyphSet] = Once()


def glyph_set() -> GlyphSet:
    """The set, read on first use (a twentieth of a second) and kept for the process."""
    return _glyphs.get(_load)


def prepare() -> None:
    """Read the set and load the drawing library (CairoSVG's C bindings take most of a second
    to load) now, as a worker starts, rather than in its first job."""
    glyph_set()
    render(DRAWN[0].body, 8)


def _load() -> GlyphSet:
    data = json.loads(gzip.decompress((FOLDER / "fluent_emoji_flat.json.gz").read_bytes()))
    glyphs = [
        Glyph(
            g["name"],
            g["category"],
            tuple(g["keywords"]),
            g["body"],
            tuple((hex_colour, share) for hex_colour, share in g["fills"]),
        )
        for g in data["glyphs"]
    ]
    vectors = np.load(FOLDER / f"embeddings-v{DESCRIPTIONS_VERSION}.npy", allow_pickle=False)
    if len(vectors) != len(glyphs) + len(DRAWN) + len(COMPOSITES):
        raise ValueError("the glyph embeddings do not match the glyphs: run tools/glyphs.py")
    return GlyphSet([*glyphs, *DRAWN], vectors)


def _hex(rgb: np.ndarray) -> str:
    red, green, blue = (round(float(c) * 255) for c in rgb)
    return f"#{red:02x}{green:02x}{blue:02x}"


def recoloured_body(glyph: Glyph, colour: RGB) -> str:
    """The glyph's markup with its main colour group turned into `colour`: the largest coloured
    fill and the fills of a like hue (a bicycle's frame and its shading), each keeping its
    lightness relative to the main one; a glyph with no coloured fill changes its largest."""
    if not glyph.fills:
        return glyph.body
    hexes = [hex_colour for hex_colour, _ in glyph.fills]
    rgb = np.array([[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in hexes], dtype=np.float64)
    lab = oklab_many(rgb)
    chroma = np.hypot(lab[:, 1], lab[:, 2])
    hue = np.degrees(np.arctan2(lab[:, 2], lab[:, 1]))
    coloured = np.flatnonzero(chroma >= 0.05)
    if len(coloured):
        main = int(coloured[0])  # fills are ordered by area
        distance = np.abs((hue - hue[main] + 180.0) % 360.0 - 180.0)
        group = [
            int(i)
            for i in coloured
            if distance[i] <= 35.0 and abs(lab[i, 0] - lab[main, 0]) <= 0.3  # not dark tyres
        ]
    else:
        main = 0
        group = [int(i) for i in range(len(hexes)) if abs(lab[i, 0] - lab[0, 0]) <= 0.12]
    target = oklab_many(np.array([colour]) * 255.0)[0]
    body = glyph.body
    for index in group:
        lightness = np.clip(target[0] + 0.8 * (lab[index, 0] - lab[main, 0]), 0.05, 0.98)
        new = srgb_from_oklab(np.array([[lightness, target[1], target[2]]]))[0]
        body = re.sub(f'fill="{hexes[index]}"', f'fill="{_hex(new)}"', body, flags=re.IGNORECASE)
    return body


def render(body: str, size: int, flip: bool = False) -> Float:
    """A glyph drawn from its vectors at `size` x `size` pixels: float32 RGBA, colour not
    premultiplied, in [0, 1]."""
    import cairosvg  # Cairo's shared library: loaded only when something is drawn
    from PIL import Image

    transform = ' transform="matrix(-1 0 0 1 32 0)"' if flip else ""
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {VIEW_BOX} {VIEW_BOX}">'
        f"<g{transform}>{body}</g></svg>"
    )
    png = cairosvg.svg2png(bytestring=svg.encode(), output_width=size, output_height=size)
    assert isinstance(png, bytes)
    with Image.open(io.BytesIO(png)) as opened:
        rgba = np.asarray(opened.convert("RGBA"), dtype=np.float32)
    return rgba * np.float32(1.0 / 255.0)
