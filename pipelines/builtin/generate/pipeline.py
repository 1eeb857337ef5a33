"""`BuiltinGenerate`: for each variation, plan a scene and paint it, then paint it over in the
learned style the prompt names and in the look of any references."""

from __future__ import annotations

import logging
from collections.abc import Callable

from PIL import Image

from pipelines.base import GenerateInput, ImageOutput, JobControl, StyleHints
from pipelines.builtin import painting_styles
from pipelines.builtin.generate.layout import QUALITIES, plan_scene
from pipelines.builtin.generate.painter import REPORTS_PER_IMAGE, Painter
from pipelines.builtin.generate.palette import build_palette
from pipelines.builtin.generate.prompt import layout_of, parse_prompt, undrawable_words
from pipelines.builtin.generate.seeds import rng_for, stable_int
from pipelines.builtin.imaging import log_peak_memory, to_array, to_image

log = logging.getLogger(__name__)
CAN_DRAW = (
    "The builtin painter paints only landscapes, seas, skies and space with the sun, moon, "
    "stars and clouds; for other subjects use a real model (`sfumato models pull`, "
    "docs/models.md)"
)


class BuiltinGenerate:
    """Text to image with no model: a procedural painter steered by the prompt's words, then
    painted over in a learned style the prompt names and in the look of any references."""

    operation = "generate"

    def run(self, inputs: GenerateInput, control: JobControl) -> ImageOutput:
        quality = QUALITIES.get(inputs.quality)
        if quality is None:
            raise ValueError(
                f"unknown quality {inputs.quality!r}; expected one of {list(QUALITIES)}"
            )
        if inputs.width < 1 or inputs.height < 1 or inputs.variations < 1:
            raise ValueError("width, height and variations must be positive")
        terms = parse_prompt(inputs.prompt)
        # A brand style lends its palette (the hex colours) and the moods of its words, never
        # a scene or an art style: its text names colours ("charcoal", "sea green") and fonts.
        style_moods = brand_moods(inputs.style)
        terms.moods.extend(mood for mood in style_moods if mood not in terms.moods)
        layout = layout_of(terms)
        palette = build_palette(terms, layout, inputs.references, inputs.style)
        learned = painting_styles.find_learned_style(inputs.prompt)
        board = painting_styles.reference_board(inputs.references) if inputs.references else None
        paint_width = max(1, round(inputs.width * quality.render_scale))
        paint_height = max(1, round(inputs.height * quality.render_scale))
        shorter = min(paint_width, paint_height)
        # Styling costs about as much as painting at 1K; give it a matching share of progress.
        paint_share = 0.4 if learned or board else 1.0
        images = []
        for index in range(inputs.variations):
            control.progress(
                index / inputs.variations,
                f"planning image {index + 1} of {inputs.variations}",
            )
            root = stable_int(inputs.seed, index)
            plan = plan_scene(
                terms, layout, palette, root, paint_width / shorter, paint_height / shorter, quality
            )
            painter = Painter(plan, palette, paint_width, paint_height, rng_for(root, "grain"))
            image = painter.paint(self._reporter(control, index, inputs.variations, paint_share))
            if image.size != (inputs.width, inputs.height):
                image = image.resize((inputs.width, inputs.height), Image.Resampling.LANCZOS)
            if learned or board:
                control.progress((index + paint_share) / inputs.variations, "styling")
                image = paint_over(image, learned[0] if learned else None, board)
            images.append(image)
        notes = [
            f"builtin procedural painter: {layout} layout, {palette.time} light",
            "understood: "
            + (", ".join(terms.recognised) or "nothing; palette from the prompt text"),
        ]
        cannot_draw = ", ".join(undrawable_words(terms, painting_styles.STYLE_WORDS))
        if cannot_draw and not (terms.scenes or terms.features):
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
            )
        if board:
            notes.append(
                f"look taken from {len(inputs.references)} reference image(s) by style transfer"
            )
        log_peak_memory(log, "generate", inputs.width, inputs.height)
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


def paint_over(
    image: Image.Image, learned: painting_styles.LearnedStyle | None, board: Image.Image | None
) -> Image.Image:
    """The learned style first; then the references pull the look (and colours) their way."""
    engine = painting_styles.shared_engine()
    picture = to_array(image)
    if learned is not None:
        picture = engine.learned(picture, learned, LEARNED_STYLE_STRENGTH)
    if board is not None:
        strength = REFERENCE_STRENGTH_UNDER_STYLE if learned else REFERENCE_STRENGTH
        picture = engine.from_reference(picture, board, strength)
    return to_image(picture)


def brand_moods(style: StyleHints | None) -> list[str]:
    """The moods a brand style's tone and aesthetic words stand for ("dark", "warm")."""
    if style is None:
        return []
    return parse_prompt(" ".join((*style.tone, style.aesthetic))).moods
