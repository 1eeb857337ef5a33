"""Start and end frames to video with a first-last-frame diffusion model (e.g. Wan 2.1 FLF2V
through `WanImageToVideoPipeline`, which takes the end frame as `last_image`).

The model makes one motion between the two frames, as many frames as the duration needs at its
rate, up to its longest clip; a longer transition is made at the longest clip and stretched by
the retiming to 24 fps (RIFE in-betweens, `clip.py`), since a motion between two fixed frames
cannot be cut into segments without inventing frames in the middle. The soundtrack rises to the
middle, as the builtin transition's does.
"""

from __future__ import annotations

from models.settings import ModelSettings
from pipelines.base import JobControl, TransitionInput, VideoOutput
from pipelines.diffusion.clip import soundtrack_for, spanning_positions, step_reporter, write_clip
from pipelines.diffusion.video_model import VideoModel, fit


class DiffusionTransition:
    """Join two frames with the registry's first-last-frame model."""

    operation = "transition"

    def __init__(
        self, models: ModelSettings | None = None, model: VideoModel | None = None
    ) -> None:
        self.model = model or VideoModel(
            self.operation, needs=("image", "last_image"), models=models
        )

    def run(self, inputs: TransitionInput, control: JobControl) -> VideoOutput:
        geometry = self.model.geometry
        plan = self.model.plan(inputs.duration, inputs.width, inputs.height)
        native = plan.native
        length = min(plan.model_frames, geometry.max_frames)
        control.progress(0.0, "starting the model")
        frames = self.model.generate(
            {"image": fit(inputs.start, native), "last_image": fit(inputs.end, native)},
            inputs.prompt,
            inputs.negative_prompt,
            native,
            length,
            inputs.seed,
            step_reporter(control, 0, 1, "denoising"),
            previews=control,
        )
        soundtrack = soundtrack_for(
            inputs.prompt, plan.frame_count, inputs.seed, inputs.audio, plan.seconds / 2
        )
        positions = spanning_positions(plan.frame_count, len(frames))
        stretched = len(frames) < plan.model_frames
        note = (
            f"{self.model.spec.model}: {len(frames)} frames at {native[0]}x{native[1]}, "
            f"{geometry.fps:g} fps{' (its longest clip, stretched)' if stretched else ''}"
        )
        size = (inputs.width, inputs.height)
        return write_clip(frames, positions, inputs.output_path, size, soundtrack, control, note)
