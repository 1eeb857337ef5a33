"""`BuiltinEdit`: plan the instruction's steps, apply them in order, recolour towards a brand
style's palette, and say in the notes what was done."""

from __future__ import annotations

import logging
import zlib

import numpy as np
from PIL import Image

from pipelines.base import EditInput, ImageOutput, JobControl
from pipelines.builtin import painting_styles
from pipelines.builtin.edit.adjustments import (
    ORDER,
    WEIGHTS,
    Context,
    apply_step,
    brand_grade,
)
from pipelines.builtin.edit.instructions import plan_edit
from pipelines.builtin.generate.compose import draw_sprites, place_subjects
from pipelines.builtin.generate.places import Stage
from pipelines.builtin.generate.subjects import read_scene
from pipelines.builtin.glyphs import prepare as prepare_glyphs
from pipelines.builtin.imaging import log_peak_memory, to_array, to_image
from pipelines.builtin.stages import Stages

log = logging.getLogger(__name__)
# Where added things stand in a picture the editor cannot see into: on the ground near the
# bottom, a third of the picture tall; things "in the sky" go high up.
ADDED_STAGE = Stage(stand=0.93, main_height=0.33, floor=0.8)


class BuiltinEdit:
    """Instruction edits on the CPU: colour, tone, looks, painting styles, reference looks."""

    operation = "edit"

    def __init__(self) -> None:
        prepare_glyphs()  # for "add ...", loaded as a worker starts

    def run(self, inputs: EditInput, control: JobControl) -> ImageOutput:
        plan = plan_edit(inputs.prompt, bool(inputs.references))
        steps = sorted(plan.steps, key=lambda s: ORDER.index(s.operation))
        stages = Stages(
            control,
            {"reading": 1.0}
            | {f"{i}:{s.operation}": WEIGHTS.get(s.operation, 1.0) for i, s in enumerate(steps)},
        )
        stages.begin("reading")
        source = inputs.source.convert("RGB")
        picture = to_array(source)
        context = Context(
            references=inputs.references,
            rng=np.random.default_rng([inputs.seed, zlib.crc32(inputs.prompt.encode())]),
        )
        for index, step in enumerate(steps):
            stages.begin(f"{index}:{step.operation}")
            picture = apply_step(picture, step, context)
        added: list[str] = []
        for text in plan.additions:
            scene = read_scene(text, painting_styles.STYLE_WORDS)
            if not scene.subjects:
                missing = ", ".join(scene.not_drawn) or text
                plan.skipped.append(f"{missing!r} not added: no drawing of it is close enough")
                continue
            rng = np.random.default_rng([inputs.seed, zlib.crc32(text.encode())])
            height, width = picture.shape[:2]
            sprites = place_subjects(scene.subjects, ADDED_STAGE, width, height, rng)
            draw_sprites(picture, sprites)
            added += [
                s.label + (", in the sky" if s.relation == "in the sky" else "")
                for s in scene.subjects
            ]
        if plan.fallback:
            notes = [
                f"no edit the builtin editor knows was found in {inputs.prompt!r}; applied the "
                f"closest plausible change: {plan.fallback}"
            ]
        else:
            notes = ["builtin editor applied: " + "; ".join(plan.applied)] if plan.applied else []
        if added:
            untouched = "" if steps else " (the rest of the picture untouched)"
            notes.append("added: " + "; ".join(added) + untouched)
        notes += [f"not applied: {reason}" for reason in plan.skipped]
        if inputs.style is not None and inputs.style.palette:
            picture = brand_grade(picture, inputs.style.palette)
            notes.append("recoloured towards the brand style's palette")
        image = to_image(picture)
        if inputs.mask is not None:
            # The edits stand where the mask is white, the source where it is black (grey
            # blends), so nothing outside the masked area changes.
            image = Image.composite(image, source, inputs.mask.convert("L"))
            notes.append("applied inside the mask only")
        if inputs.negative_prompt:
            notes.append("the builtin editor does not use a negative prompt")
        log_peak_memory(log, "edit", image.width, image.height)
        return ImageOutput(images=[image], notes=notes)
