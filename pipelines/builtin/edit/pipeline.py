"""`BuiltinEdit`: plan the instruction's steps, apply them in order, recolour towards a brand
style's palette, and say in the notes what was done."""

from __future__ import annotations

import logging
import zlib

import numpy as np

from pipelines.base import EditInput, ImageOutput, JobControl
from pipelines.builtin.edit.adjustments import (
    ORDER,
    WEIGHTS,
    Context,
    apply_step,
    brand_grade,
)
from pipelines.builtin.edit.instructions import plan_edit
from pipelines.builtin.imaging import log_peak_memory, to_array, to_image
from pipelines.builtin.stages import Stages

log = logging.getLogger(__name__)


class BuiltinEdit:
    """Instruction edits on the CPU: colour, tone, looks, painting styles, reference looks."""

    operation = "edit"

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
        if plan.fallback:
            notes = [
                f"no edit the builtin editor knows was found in {inputs.prompt!r}; applied the "
                f"closest plausible change: {plan.fallback}"
            ]
        else:
            notes = ["builtin editor applied: " + "; ".join(plan.applied)]
        notes += [f"not applied: {reason}" for reason in plan.skipped]
        if inputs.style is not None and inputs.style.palette:
            picture = brand_grade(picture, inputs.style.palette)
            notes.append("recoloured towards the brand style's palette")
        image = to_image(picture)
        log_peak_memory(log, "edit", image.width, image.height)
        return ImageOutput(images=[image], notes=notes)
