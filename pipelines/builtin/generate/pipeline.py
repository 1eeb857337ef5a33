"""`BuiltinGenerate`: for each variation, plan a scene and paint it, then paint it over in the
learned style the prompt names and in the look of any references."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import numpy as np
from PIL import Image

from pipelines.base import GenerateInput, ImageOutput, JobControl, StyleHints, offer_preview
from pipelines.builtin import painting_styles
from pipelines.builtin.easing import smoothstep
from pipelines.builtin.generate.compose import draw_sprites, place_subjects
from pipelines.builtin.generate.layout import QUALITIES, plan_scene
from pipelines.builtin.generate.painter import REPORTS_PER_IMAGE, Painter
from pipelines.builtin.generate.palette import Palette, build_palette
from pipelines.builtin.generate.places import (
    BRICK,
    LANDSCAPE_STAGE,
    STAGES,
    WALL,
    PlacePainter,
    Stage,
    place_colours,
)
from pipelines.builtin.generate.prompt import layout_of, parse_prompt
from pipelines.builtin.generate.seeds import rng_for, stable_int
from pipelines.builtin.generate.subjects import SceneWords, Subject, read_scene
from pipelines.builtin.glyphs import Glyph
from pipelines.builtin.glyphs import prepare as prepare_glyphs
from pipelines.builtin.imaging import Float, log_peak_memory, luma, to_array, to_image
from pipelines.styles.embeddings import load_embeddings

log = logging.getLogger(__name__)
CAN_DRAW = (
    "The builtin painter draws about 1,200 flat subjects (animals, food, vehicles, people at "
    "work, everyday objects) in landscapes, rooms, kitchens, streets and on tables; for other "
    "subjects use a real model (`sfumato models pull`, docs/models.md)"
)
# Where a subject stands when the prompt names no place, by what it is.
VEHICLES = re.compile(r"car|bus|truck|taxi|motorcycle|bicycle|scooter|van|ambulance|fire-engine")
TABLE_CATEGORIES = ("Food & Drink", "Objects")
# Outdoor places: the landscape scene each one paints.
OUTDOOR_SCENES = {"beach": "sea", "park": "hills", "snow": "hills"}


class BuiltinGenerate:
    """Text to image with no model: a procedural painter steered by the prompt's words, its
    subjects drawn from a vendored set of flat vector glyphs, then painted over in a learned
    style the prompt names and in the look of any references."""

    operation = "generate"

    def __init__(self) -> None:
        # Loaded now, as a worker starts, rather than in its first job.
        prepare_glyphs()
        load_embeddings()

    def run(self, inputs: GenerateInput, control: JobControl) -> ImageOutput:
        quality = QUALITIES.get(inputs.quality)
        if quality is None:
            raise ValueError(
                f"unknown quality {inputs.quality!r}; expected one of {list(QUALITIES)}"
            )
        if inputs.width < 1 or inputs.height < 1 or inputs.variations < 1:
            raise ValueError("width, height and variations must be positive")
        scene = read_scene(inputs.prompt, painting_styles.STYLE_WORDS)
        place = scene.place or _default_place(scene)
        # The palette reads what the subjects and the place did not take: "a red bicycle" is a
        # red bicycle, not a red sky.
        terms = parse_prompt(_unclaimed(inputs.prompt, scene.consumed))
        if place in OUTDOOR_SCENES and OUTDOOR_SCENES[place] not in terms.scenes:
            terms.scenes.insert(0, OUTDOOR_SCENES[place])
        if place == "snow" and "snowy" not in terms.moods:
            terms.moods.append("snowy")
        indoor = place in STAGES
        if (indoor or scene.subjects) and terms.time is None:
            terms.time = "day"  # things are drawn to be seen: no random dusk
        # A brand style lends its palette (the hex colours) and the moods of its words, never
        # a scene or an art style: its text names colours ("charcoal", "sea green") and fonts.
        style_moods = brand_moods(inputs.style)
        terms.moods.extend(mood for mood in style_moods if mood not in terms.moods)
        layout = layout_of(terms)
        palette = build_palette(terms, layout, inputs.references, inputs.style)
        learned = painting_styles.find_learned_style(inputs.prompt)
        board = painting_styles.reference_board(inputs.references) if inputs.references else None
        keep_colours = bool(terms.colours or palette.brand or any(s.colour for s in scene.subjects))
        paint_width = max(1, round(inputs.width * quality.render_scale))
        paint_height = max(1, round(inputs.height * quality.render_scale))
        shorter = min(paint_width, paint_height)
        stage = STAGES.get(place or "", LANDSCAPE_STAGE)
        # Styling costs about as much as painting at 1K; give it a matching share of progress.
        paint_share = 0.4 if learned or board else 1.0
        images = []
        for index in range(inputs.variations):
            control.progress(
                index / inputs.variations,
                f"planning image {index + 1} of {inputs.variations}",
            )
            root = stable_int(inputs.seed, index)
            painter: Painter | PlacePainter
            if indoor:
                assert place is not None
                colours = place_colours(palette, scene.place_colour, _default_wall(place))
                painter = PlacePainter(
                    place,
                    colours,
                    paint_width,
                    paint_height,
                    rng_for(root, "place"),
                    rng_for(root, "grain"),
                    palette.vignette,
                )
            else:
                plan = plan_scene(
                    terms,
                    layout,
                    palette,
                    root,
                    paint_width / shorter,
                    paint_height / shorter,
                    quality,
                )
                painter = Painter(plan, palette, paint_width, paint_height, rng_for(root, "grain"))
            image = painter.paint(self._reporter(control, index, inputs.variations, paint_share))
            if image.size != (inputs.width, inputs.height):
                image = image.resize((inputs.width, inputs.height), Image.Resampling.LANCZOS)
            if index == 0:
                offer_preview(control, image.copy)  # the painted scene, before subjects and styling
            if scene.subjects:
                image = draw_subjects(
                    image,
                    scene.subjects,
                    stage,
                    palette,
                    rng_for(root, "subjects"),
                    layout,
                    place,
                )
            if learned or board:
                if index == 0 and scene.subjects:
                    offer_preview(control, image.copy)
                control.progress((index + paint_share) / inputs.variations, "styling")
                image = paint_over(image, learned[0] if learned else None, board, keep_colours)
            images.append(image)
        notes = [
            f"builtin procedural painter: {place if indoor else layout} layout, "
            f"{palette.time} light"
        ]
        drawn = [subject.label for subject in scene.subjects]
        if scene.place_words:
            colour = (
                f" ({_colour_word(inputs.prompt, scene.place_words)})" if scene.place_colour else ""
            )
            drawn.append(scene.place_words + colour)
        if drawn:
            notes.append("drew: " + ", ".join(dict.fromkeys(drawn)))
        understood = list(dict.fromkeys(terms.recognised))
        if understood:
            notes.append("understood: " + ", ".join(understood))
        cannot_draw = ", ".join(scene.not_drawn)
        if cannot_draw and not (scene.subjects or terms.scenes or terms.features or indoor):
            notes.append(
                f"cannot draw the prompt's subject ({cannot_draw}): this is a {layout} "
                f"landscape in its colours instead. {CAN_DRAW}"
            )
        elif cannot_draw:
            notes.append(f"not drawn: {cannot_draw}. {CAN_DRAW}")
        if inputs.style:
            notes.append(
                f"brand style: its {len(inputs.style.palette)} colours"
                + (f", moods {', '.join(style_moods)}" if style_moods else "")
            )
        if learned:
            notes.append(
                f"painted in the learned style {learned[0].name!r} (from {learned[1][0]!r})"
                + (", keeping the prompt's colours" if keep_colours else "")
            )
        if board:
            notes.append(
                f"look taken from {len(inputs.references)} reference image(s) by style transfer"
            )
        log_peak_memory(log, "generate", inputs.width, inputs.height)
        if inputs.negative_prompt:
            notes.append("the builtin painter does not use a negative prompt")
        return ImageOutput(images=images, notes=notes)

    @staticmethod
    def _reporter(
        control: JobControl, index: int, count: int, share: float
    ) -> Callable[[float], None]:
        """Report a few times per image rather than once per strip."""
        next_report = 1.0 / REPORTS_PER_IMAGE

        def report(done: float) -> None:
            nonlocal next_report
            if done >= next_report:
                next_report += 1.0 / REPORTS_PER_IMAGE
                control.progress((index + done * share) / count, "painting")

        return report


# Full strength would lose the composition under some styles' strokes.
LEARNED_STYLE_STRENGTH = 0.9
REFERENCE_STRENGTH = 0.7
REFERENCE_STRENGTH_UNDER_STYLE = 0.45


# How much of the picture's own colour comes back over a style, when the prompt or a brand
# named colours: the style keeps its strokes and light, the picture its hues.
KEPT_COLOUR = 0.8


def paint_over(
    image: Image.Image,
    learned: painting_styles.LearnedStyle | None,
    board: Image.Image | None,
    keep_colours: bool = False,
) -> Image.Image:
    """The learned style first; then the references pull the look (and colours) their way;
    then, when `keep_colours`, the picture's own colours come back under the new look."""
    engine = painting_styles.shared_engine()
    original = to_array(image)
    picture = original
    if learned is not None:
        picture = engine.learned(picture, learned, LEARNED_STYLE_STRENGTH)
    if board is not None:
        strength = REFERENCE_STRENGTH_UNDER_STYLE if learned else REFERENCE_STRENGTH
        picture = engine.from_reference(picture, board, strength)
    if keep_colours:
        # The styled light (luma) with the original's colour around it.
        styled_luma = luma(picture)[..., None]
        original_colour = original - luma(original)[..., None]
        styled_colour = picture - styled_luma
        picture = styled_luma + styled_colour + (original_colour - styled_colour) * KEPT_COLOUR
    return to_image(picture)


def draw_subjects(
    image: Image.Image,
    subjects: list[Subject],
    stage: Stage,
    palette: Palette,
    rng: np.random.Generator,
    layout: str,
    place: str | None,
) -> Image.Image:
    """The subjects drawn over the painted scene at its full size, lit like it."""
    canvas = to_array(image)
    height, width = canvas.shape[:2]
    if place == "beach":
        _sand(canvas, stage, palette)
    sprites = place_subjects(subjects, stage, width, height, rng, sky_only=layout == "space")
    light = np.float32(0.5 + 0.5 * palette.land_light_level)
    for sprite in (part for whole in sprites for part in whole.parts()):
        sprite.rgba[..., :3] *= light
    draw_sprites(canvas, sprites)
    return to_image(canvas)


SAND = (0.93, 0.82, 0.62)


def _sand(canvas: Float, stage: Stage, palette: Palette) -> None:
    """A beach in front of the sea: sand up to a gently waving line, with a line of foam."""
    height, width = canvas.shape[:2]
    u = np.arange(width, dtype=np.float32) / min(width, height)
    edge = (stage.stand - 0.16 + 0.015 * np.sin(u * 7.0) + 0.01 * np.sin(u * 17.0)) * height
    rows = np.arange(height, dtype=np.float32)[:, None]
    sand = smoothstep(0.0, 2.0, rows - edge[None, :])
    foam = np.exp(-(((rows - edge[None, :] + 3.0) / 3.0) ** 2)) * 0.8
    colour = np.asarray(SAND, np.float32) * np.float32(0.55 + 0.45 * palette.land_light_level)
    canvas += (1.0 - canvas) * foam[..., None]
    canvas += (colour - canvas) * sand[..., None]


def _unclaimed(prompt: str, claimed: set[str]) -> str:
    return " ".join(w for w in re.findall(r"[a-z][a-z'-]*", prompt.lower()) if w not in claimed)


def _default_place(scene: SceneWords) -> str | None:
    """A table for food and objects, a street for vehicles, when no place or landscape is named:
    a landscape otherwise."""
    if not scene.subjects:
        return None
    main = scene.subjects[0].found.entry
    if isinstance(main, Glyph):
        if VEHICLES.search(main.name):
            return "street"
        if main.category in TABLE_CATEGORIES:
            return "table"
    return None


def _default_wall(place: str) -> tuple[float, float, float]:
    return BRICK if place == "brick wall" else WALL


def _colour_word(prompt: str, place_words: str) -> str:
    match = re.search(r"([a-z]+) " + re.escape(place_words), prompt.lower())
    return match[1] if match else ""


def brand_moods(style: StyleHints | None) -> list[str]:
    """The moods a brand style's tone and aesthetic words stand for ("dark", "warm")."""
    if style is None:
        return []
    return parse_prompt(" ".join((*style.tone, style.aesthetic))).moods
