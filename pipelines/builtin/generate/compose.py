"""The subjects drawn into a painted scene: each glyph rendered from its vectors at the size it
takes in the picture (never an enlarged bitmap), recoloured where the prompt gave it a colour,
with a soft contact shadow and a drop shadow, placed by the scene's stage and the relations.

Sizes follow each subject's usual size (`TYPICAL_METRES`), so a cat on a sofa is smaller than the
sofa; the largest thing on the ground takes the stage's `main_height`. Placement is in pixels of
the final picture and every random choice comes from the job's seed (`rng`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import cv2
import numpy as np

from pipelines.builtin.generate.places import Stage
from pipelines.builtin.generate.subjects import Subject
from pipelines.builtin.glyphs import Composite, Glyph, glyph_set, recoloured_body, render
from pipelines.builtin.imaging import Float

# A subject's usual height in metres, by category, and for the ones that differ from theirs.
CATEGORY_METRES = {
    "Animals & Nature": 0.8,
    "Food & Drink": 0.25,
    "Travel & Places": 3.0,
    "Objects": 0.5,
    "Activities": 0.5,
    "People & Body": 1.7,
    "Smileys & Emotion": 0.6,
    "Drawn": 12.0,
}
TYPICAL_METRES = {
    "cat": 0.45,
    "dog": 0.7,
    "mouse": 0.1,
    "rabbit": 0.4,
    "hamster": 0.1,
    "bird": 0.25,
    "chicken": 0.5,
    "elephant": 3.2,
    "giraffe": 5.0,
    "horse": 1.9,
    "cow": 1.6,
    "camel": 2.1,
    "deciduous-tree": 6.0,
    "evergreen-tree": 8.0,
    "palm-tree": 7.0,
    "couch-and-lamp": 1.5,
    "bed": 1.0,
    "chair": 1.0,
    "bicycle": 1.1,
    "motorcycle": 1.2,
    "automobile": 1.5,
    "bus": 3.2,
    "house": 7.0,
    "tent": 2.0,
    "potted-plant": 0.8,
    "teddy-bear": 0.4,
    "guitar": 1.0,
    "laptop": 0.3,
    "teapot": 0.25,
    "umbrella": 1.0,
    "snowman": 1.6,
    "robot": 1.5,
}
SKY_SHARE = 0.26  # height of a thing in the sky, as a share of the picture's height
HELD_SHARE = 0.42  # a held thing's height, as a share of its holder's
MIN_SHARE = 0.35  # the smallest thing on the ground, as a share of the largest
SHADOW_OPACITY = 0.3


@dataclass
class Sprite:
    """One rendered glyph and where its drawn part lies, in pixels of the picture."""

    rgba: Float
    left: int  # of the square the glyph is rendered in
    top: int
    box: tuple[int, int, int, int]  # the drawn part inside the square: left, top, right, bottom
    grounded: bool
    # Drawn over it, at these offsets from its square (a composite's held thing).
    attached: list[tuple[Sprite, int, int]] = field(default_factory=list)

    def parts(self) -> list[Sprite]:
        """It and what is attached to it, at their places in the picture."""
        found = [self]
        for part, dx, dy in self.attached:
            part.left, part.top = self.left + dx, self.top + dy
            found.append(part)
        return found

    @property
    def width(self) -> int:
        return self.box[2] - self.box[0]

    @property
    def height(self) -> int:
        return self.box[3] - self.box[1]

    def move_bottom_centre(self, x: float, y: float) -> None:
        self.left = round(x - (self.box[0] + self.box[2]) / 2)
        self.top = round(y - self.box[3])

    def surface(self) -> tuple[float, float]:
        """Where something set on it rests, in picture pixels: the column of its drawn part
        nearest the middle whose top is its typical top (a sofa's seat, not its lamp)."""
        alpha = self.rgba[self.box[1] : self.box[3], self.box[0] : self.box[2], 3] > 0.5
        drawn = alpha.any(axis=0)
        tops = np.where(drawn, alpha.argmax(axis=0), alpha.shape[0])
        inner = tops[int(0.1 * len(tops)) : max(int(0.9 * len(tops)), 1)]
        typical = (
            float(np.median(inner[inner < alpha.shape[0]]))
            if (inner < alpha.shape[0]).any()
            else 0.0
        )
        near = np.flatnonzero(np.abs(tops - typical) <= 0.06 * alpha.shape[0])
        middle = len(tops) / 2
        column = int(near[np.argmin(np.abs(near - middle))]) if len(near) else int(middle)
        return self.left + self.box[0] + column, self.top + self.box[1] + float(tops[column])

    @property
    def bounds(self) -> tuple[int, int, int, int]:
        """The drawn part in picture pixels."""
        return (
            self.left + self.box[0],
            self.top + self.box[1],
            self.left + self.box[2],
            self.top + self.box[3],
        )


@lru_cache(maxsize=2048)
def _drawn_share(body: str) -> tuple[float, float, float, float]:
    """The drawn part of a glyph's square, as shares of its side: left, top, right, bottom."""
    alpha = render(body, 64)[..., 3] > 0.1
    rows, columns = np.flatnonzero(alpha.any(axis=1)), np.flatnonzero(alpha.any(axis=0))
    if not len(rows):
        return 0.0, 0.0, 1.0, 1.0
    return columns[0] / 64, rows[0] / 64, (columns[-1] + 1) / 64, (rows[-1] + 1) / 64


def _metres(entry: Glyph | Composite) -> float:
    if isinstance(entry, Composite):
        return 1.7
    return TYPICAL_METRES.get(entry.name, CATEGORY_METRES.get(entry.category, 1.0))


def _sprite(body: str, height: float, flip: bool, grounded: bool) -> Sprite:
    share = _drawn_share(body)
    side = max(4, round(height / max(share[3] - share[1], 0.05)))
    rgba = render(body, side, flip)
    left, right = share[0], share[2]
    if flip:
        left, right = 1.0 - right, 1.0 - left
    box = (round(left * side), round(share[1] * side), round(right * side), round(share[3] * side))
    return Sprite(rgba, 0, 0, box, grounded)


def _body(subject: Subject, glyph: Glyph) -> str:
    if subject.colour is None:
        return glyph.body
    return recoloured_body(glyph, subject.colour)


def place_subjects(
    subjects: list[Subject],
    stage: Stage,
    width: int,
    height: int,
    rng: np.random.Generator,
    sky_only: bool = False,
) -> list[Sprite]:
    """The sprites of every subject, in drawing order (far to near, anchors before what stands
    on them)."""
    scale_px = min(width, height)
    stand_y = stage.stand * height
    grounded = [
        s
        for s in subjects
        if s.relation not in ("in the sky", "holding", "with", "wearing") and not sky_only
    ]
    tallest = max((_metres(s.found.entry) for s in grounded), default=1.0)
    main_px = stage.main_height * height

    def ground_height(subject: Subject) -> float:
        share = max(MIN_SHARE, _metres(subject.found.entry) / tallest)
        return main_px * share * subject.size

    roots = [
        i
        for i, s in enumerate(subjects)
        if s.anchor is None and s.relation != "in the sky" and not sky_only
    ]
    slots = _slots(len(roots), width, rng)
    placed: dict[int, list[Sprite]] = {}
    order: list[tuple[float, int, Sprite]] = []

    def add(index: int, sprite: Sprite, depth: float) -> None:
        placed.setdefault(index, []).append(sprite)
        order.append((depth, len(order), sprite))

    for index, slot in zip(roots, slots, strict=True):
        subject = subjects[index]
        copies = subject.count
        for copy in range(copies):
            sprite = _make(subject, ground_height(subject), rng, grounded=True)
            spread = (copy - (copies - 1) / 2) * sprite.width * 0.85
            x = slot + spread + rng.uniform(-0.02, 0.02) * scale_px
            y = stand_y + (copy % 2) * 0.02 * height
            sprite.move_bottom_centre(x, y)
            add(index, sprite, y)
    # Things that stand on, under, beside, before or behind another, once it is placed.
    for index, subject in enumerate(subjects):
        if index in placed or subject.anchor is None or subject.anchor not in placed:
            continue
        if subject.relation in ("holding", "with", "wearing"):
            continue
        anchor = placed[subject.anchor][0]
        a_left, a_top, a_right, a_bottom = anchor.bounds
        for copy in range(subject.count):
            sprite = _make(subject, ground_height(subject), rng, grounded=True)
            relation = subject.relation
            centre = (a_left + a_right) / 2
            offset = (copy - (subject.count - 1) / 2) * sprite.width * 0.9
            depth: float
            if relation == "on":
                sprite.grounded = False
                surface_x, surface_y = anchor.surface()
                x, y = surface_x + offset, surface_y + 0.08 * (a_bottom - a_top)
                depth = a_bottom + 1
            elif relation == "under":
                x, y = centre + offset, a_bottom + 0.01 * height
                depth = a_bottom + 2
            elif relation == "in front of":
                x, y = centre + 0.25 * (a_right - a_left) + offset, a_bottom + 0.05 * height
                depth = y
            elif relation == "behind":
                x, y = centre - 0.3 * (a_right - a_left) + offset, a_bottom - 0.06 * height
                depth = a_bottom - 1
            else:  # beside, against
                gap = 0.0 if relation == "against" else 0.04 * scale_px
                side = 1 if (a_right + sprite.width < width * 0.95) else -1
                edge = a_right if side > 0 else a_left
                x = edge + side * (gap + sprite.width / 2) + offset
                y = a_bottom
                depth = y
            sprite.move_bottom_centre(x, min(y, height * 0.99))
            add(index, sprite, depth)
    # Held and worn things, at their holder's hand or on its head.
    for index, subject in enumerate(subjects):
        if subject.relation not in ("holding", "with", "wearing") or subject.anchor not in placed:
            continue
        assert subject.anchor is not None
        holder = placed[subject.anchor][0]
        h_left, h_top, h_right, h_bottom = holder.bounds
        holder_h = h_bottom - h_top
        if subject.relation == "wearing":
            sprite = _make(subject, 0.4 * holder_h * subject.size, rng, grounded=False)
            sprite.move_bottom_centre((h_left + h_right) / 2, h_top + 0.18 * holder_h)
        else:
            sprite = _make(subject, HELD_SHARE * holder_h * subject.size, rng, False)
            sprite.move_bottom_centre(h_right, h_top + 0.68 * holder_h)
        add(index, sprite, h_bottom + 1)
    # Things in the sky, and anything left unplaced.
    for index, subject in enumerate(subjects):
        if index in placed:
            continue
        for copy in range(subject.count):
            sprite = _make(subject, SKY_SHARE * height * subject.size, rng, False)
            x = (
                rng.uniform(0.2, 0.8) * width
                if subject.count == 1
                else ((copy + 0.5) / subject.count * width + rng.uniform(-0.05, 0.05) * width)
            )
            y = rng.uniform(0.3, 0.42) * height
            sprite.move_bottom_centre(x, y)
            add(index, sprite, -1.0)
    return [sprite for _, _, sprite in sorted(order, key=lambda item: (item[0], item[1]))]


def _make(
    subject: Subject,
    height: float,
    rng: np.random.Generator,
    grounded: bool,
) -> Sprite:
    """A subject's sprite; a composite is its holder with the held thing drawn into it."""
    entry = subject.found.entry
    flip = bool(rng.random() < 0.3)
    if isinstance(entry, Glyph):
        return _sprite(_body(subject, entry), height, flip, grounded)
    every = glyph_set().by_name
    holder = _sprite(every[entry.holder].body, height, False, grounded)
    held = _sprite(every[entry.held].body, HELD_SHARE * 1.3 * height, False, False)
    held.move_bottom_centre(holder.box[2], holder.box[1] + 0.68 * holder.height)
    holder.attached.append((held, held.left, held.top))
    return holder


def _slots(count: int, width: int, rng: np.random.Generator) -> list[float]:
    """Where each independent subject stands across the picture."""
    if count == 0:
        return []
    if count == 1:
        return [width * rng.uniform(0.42, 0.58)]
    return [
        width * (0.18 + 0.64 * i / (count - 1)) + rng.uniform(-0.03, 0.03) * width
        for i in range(count)
    ]


def draw_sprites(canvas: Float, sprites: list[Sprite]) -> tuple[int, int, int, int] | None:
    """Each sprite over the canvas (float32 RGB) with its shadows; returns the rectangle that
    changed (left, top, right, bottom), or None."""
    height, width = canvas.shape[:2]
    changed: list[tuple[int, int, int, int]] = []
    for sprite in (part for whole in sprites for part in whole.parts()):
        changed.append(_shadow(canvas, sprite))
        side = sprite.rgba.shape[0]
        left, top = sprite.left, sprite.top
        x0, y0 = max(0, left), max(0, top)
        x1, y1 = min(width, left + side), min(height, top + side)
        if x0 >= x1 or y0 >= y1:
            continue
        patch = sprite.rgba[y0 - top : y1 - top, x0 - left : x1 - left]
        alpha = patch[..., 3:4]
        region = canvas[y0:y1, x0:x1]
        region += (patch[..., :3] - region) * alpha
        changed.append((x0, y0, x1, y1))
    if not changed:
        return None
    return (
        min(c[0] for c in changed),
        min(c[1] for c in changed),
        max(c[2] for c in changed),
        max(c[3] for c in changed),
    )


def _shadow(canvas: Float, sprite: Sprite) -> tuple[int, int, int, int]:
    """A soft drop shadow of the glyph's shape, and an oval on the ground under a standing one."""
    height, width = canvas.shape[:2]
    side = sprite.rgba.shape[0]
    blur = max(1.0, 0.03 * sprite.height)
    pad = int(3 * blur) + int(0.06 * sprite.height) + 2
    plane = np.zeros((side + 2 * pad, side + 2 * pad), np.float32)
    shift_x, shift_y = int(0.04 * sprite.height), int(0.025 * sprite.height)
    plane[pad + shift_y : pad + shift_y + side, pad + shift_x : pad + shift_x + side] = (
        sprite.rgba[..., 3] * 0.5
    )
    if sprite.grounded:
        centre = (pad + (sprite.box[0] + sprite.box[2]) // 2, pad + sprite.box[3])
        axes = (max(1, int(0.55 * sprite.width)), max(1, int(0.06 * sprite.height)))
        cv2.ellipse(plane, centre, axes, 0, 0, 360, 1.0, -1)
    plane = cv2.GaussianBlur(plane, (0, 0), blur)
    left, top = sprite.left - pad, sprite.top - pad
    x0, y0 = max(0, left), max(0, top)
    x1, y1 = min(width, left + plane.shape[1]), min(height, top + plane.shape[0])
    if x0 >= x1 or y0 >= y1:
        return (0, 0, 0, 0)
    darkening = plane[y0 - top : y1 - top, x0 - left : x1 - left] * SHADOW_OPACITY
    canvas[y0:y1, x0:x1] *= (1.0 - darkening)[..., None]
    return (x0, y0, x1, y1)
