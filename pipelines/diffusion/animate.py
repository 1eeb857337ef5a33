"""Image-to-video with a diffusion model (e.g. Wan 2.1 I2V through `WanImageToVideoPipeline`).

The image is the first frame. A clip longer than the model makes in one call is made in
segments, each an image-to-video call from the last frame of the one before (the usual way to
extend such a model's clips), with the same prompt and the next seeds. The frames are then
retimed to 24 fps and encoded with the shared MP4 writer and soundtrack (`clip.py`).
"""

from __future__ import annotations

from PIL import Image

from models.settings import ModelSettings
from pipelines.base import AnimateInput, JobControl, VideoOutput
from pipelines.diffusion.clip import model_time_positions, soundtrack_for, step_reporter, write_clip
from pipelines.diffusion.video_model import Frame, VideoModel, fit, plan_segments


class DiffusionAnimate:
    """Animate an image with the registry's image-to-video model."""

    operation = "animate"

    def __init__(
        self, models: ModelSettings | None = None, model: VideoModel | None = None
    ) -> None:
        self.model = model or VideoModel(self.operation, needs=("image",), models=models)

    def run(self, inputs: AnimateInput, control: JobControl) -> VideoOutput:
        geometry = self.model.geometry
        plan = self.model.plan(inputs.duration, inputs.width, inputs.height)
        native = plan.native
        segments = plan_segments(plan.model_frames, geometry.max_frames, geometry.frame_multiple)
        control.progress(0.0, "starting the model")
        start = fit(inputs.image, native)
        frames: list[Frame] = []
        for index, length in enumerate(segments):
            message = f"denoising segment {index + 1} of {len(segments)}"
            made = self.model.generate(
                {"image": start},
                inputs.prompt,
                inputs.negative_prompt,
                native,
                length,
                inputs.seed + index,
                step_reporter(control, index, len(segments), message),
                previews=control,
            )
            frames.extend(made if index == 0 else made[1:])
            start = Image.fromarray(made[-1])
        soundtrack = soundtrack_for(inputs.prompt, plan.frame_count, inputs.seed, inputs.audio)
        positions = model_time_positions(plan.frame_count, geometry.fps)
        note = (
            f"{self.model.spec.model}: {len(frames)} frames at {native[0]}x{native[1]}, "
            f"{geometry.fps:g} fps, in {len(segments)} segment(s) of {segments}"
        )
        size = (inputs.width, inputs.height)
        return write_clip(frames, positions, inputs.output_path, size, soundtrack, control, note)
