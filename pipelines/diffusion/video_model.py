"""A video model's clip shapes, and the model call the two diffusion video pipelines share.

A video model makes clips of its own shape: a frame rate (Wan 2.1: 16 fps), a frame-count rule
(`frame_multiple * k + 1`: its VAE packs `frame_multiple` frames into one latent after the first),
a longest clip (`max_frames`, Wan 2.1: 81) and sizes of about one pixel area (Wan 2.1 480P:
480 x 832, the registry's `resolution` 632, the side of a square of that area) in multiples of
its VAE factor times its patch size (16). The contract wants
`round(24 * duration)` frames at 24 fps at an exact size. So:

- the model runs at the size of its area nearest the requested aspect ratio (`native_size`), and
  every frame is then scaled (and centre-cropped by at most a rounding) to the exact size;
- it makes as many frames as the duration needs at its own rate, rounded up to its rule; a clip
  longer than `max_frames` is made in segments (`plan_segments`), each starting from the last
  frame of the one before (animate); a transition, one motion between two fixed frames, is made
  at `max_frames` and stretched;
- the clip is then retimed to 24 fps and written (`clip.py`).

The model call reports progress and checks for cancellation after every denoising step
(`callback_on_step_end`), draws its noise from a `torch.Generator` seeded by the job, and on a
device out-of-memory error releases the other unused models and retries once before failing
with a clear message.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from models.cache import ModelCache, shared_cache
from models.registry import ModelSpec, find_registry
from models.settings import ModelSettings
from pipelines.base import JobControl, OutOfDeviceMemory, PreviewControl
from pipelines.diffusion.device import generator_for, is_out_of_memory
from pipelines.diffusion.presets import native_size
from pipelines.diffusion.previews import factors_for, latent_preview
from pipelines.media.framing import cover
from pipelines.media.mp4 import FPS, frame_count_for

log = logging.getLogger(__name__)

Frame = NDArray[np.uint8]  # (height, width, 3) RGB


@dataclass(frozen=True)
class VideoGeometry:
    """The clip shapes a video model makes (see the module docstring)."""

    fps: float
    max_frames: int
    frame_multiple: int
    size_multiple: int

    def frames_for(self, seconds: float) -> int:
        """Frames covering `seconds` at the model's rate, rounded up to its rule, at least one
        step past the first frame."""
        steps = max(1, math.ceil(seconds * self.fps / self.frame_multiple - 1e-9))
        return steps * self.frame_multiple + 1


@dataclass(frozen=True)
class ClipPlan:
    """One requested clip in the contract's terms and in the model's."""

    frame_count: int  # output frames, at 24 fps
    seconds: float  # the clip's real length
    native: tuple[int, int]  # the size the model makes
    model_frames: int  # frames at the model's rate covering `seconds` (before `max_frames`)


# Sizes some pipeline classes insist on in `check_inputs`, whatever their VAE's factor.
CLASS_SIZE_MULTIPLE = {"WanImageToVideoPipeline": 16, "LTXImageToVideoPipeline": 32}


def geometry_for(spec: ModelSpec, pipe: Any) -> VideoGeometry:
    """The registry's options, with the frame and size factors read from the loaded pipeline
    where the options leave them out (Wan and LTX name them differently)."""
    temporal = getattr(pipe, "vae_scale_factor_temporal", None) or getattr(
        pipe, "vae_temporal_compression_ratio", None
    )
    spatial = getattr(pipe, "vae_scale_factor_spatial", None) or getattr(
        pipe, "vae_spatial_compression_ratio", None
    )
    patch = _spatial_patch(pipe)
    frame_multiple = int(spec.option("frame_multiple", temporal or 4))
    factor = math.lcm((spatial or 8) * patch, CLASS_SIZE_MULTIPLE.get(type(pipe).__name__, 1))
    size_multiple = int(spec.option("size_multiple", factor))
    max_frames = int(spec.option("max_frames", 81))
    if (max_frames - 1) % frame_multiple:
        raise ValueError(
            f"{spec.operation}: max_frames {max_frames} is not {frame_multiple}k+1 "
            "(the model's frame-count rule)"
        )
    return VideoGeometry(
        fps=float(spec.option("fps", 16)),
        max_frames=max_frames,
        frame_multiple=frame_multiple,
        size_multiple=size_multiple,
    )


def _spatial_patch(pipe: Any) -> int:
    transformer = getattr(pipe, "transformer", None)
    config = getattr(transformer, "config", None)
    patch = getattr(config, "patch_size", None)
    if isinstance(patch, list | tuple):
        return int(patch[-1])
    return int(patch or 1)


def plan_segments(total_frames: int, max_frames: int, frame_multiple: int) -> list[int]:
    """Frame counts of the segments of a clip of `total_frames` when one call makes at most
    `max_frames`: each segment after the first starts on the last frame of the one before, so
    the clip has `sum(segments) - (len(segments) - 1)` frames (at least `total_frames`)."""
    if total_frames <= max_frames:
        return [total_frames]
    steps_per_segment = max_frames - 1
    remaining = total_frames - 1
    segments = []
    while remaining > 0:
        steps = min(steps_per_segment, remaining)
        steps = math.ceil(steps / frame_multiple) * frame_multiple
        segments.append(steps + 1)
        remaining -= steps
    return segments


class VideoModel:
    """One operation's video model from the registry, loaded through the process's model cache
    at construction, so a missing model is a start-up error of the video worker.

    A video job is one clip: there is no batch to split when memory runs out, so a call that
    runs out releases the other unused models and is retried once, whole, then fails the job
    (refunded).
    """

    def __init__(
        self,
        operation: str,
        needs: tuple[str, ...] = (),
        spec: ModelSpec | None = None,
        cache: ModelCache | None = None,
        models: ModelSettings | None = None,
    ) -> None:
        models = models or ModelSettings()
        self.spec = spec or find_registry(models).spec(operation)
        self.cache = cache or shared_cache(models)
        with self.cache.pipeline_for(self.spec) as pipe:
            self._accepted = set(inspect.signature(pipe.__call__).parameters)
            self.geometry = geometry_for(self.spec, pipe)
        missing = [name for name in needs if name not in self._accepted]
        if missing:
            raise ValueError(
                f"{self.spec.pipeline} ({self.spec.model}) cannot serve {operation}: its call "
                f"takes no {', '.join(missing)}"
            )

    def plan(self, duration: float, width: int, height: int) -> ClipPlan:
        """`round(24 * duration)` output frames; the model works at its size nearest its
        training area at the requested aspect ratio, making frames at its own rate."""
        if duration <= 0:
            raise ValueError("duration must be positive")
        frame_count = frame_count_for(duration)
        seconds = frame_count / FPS
        return ClipPlan(
            frame_count=frame_count,
            seconds=seconds,
            native=native_size(self.spec, width, height, self.geometry.size_multiple),
            model_frames=self.geometry.frames_for(seconds),
        )

    def generate(
        self,
        images: dict[str, Image.Image],
        prompt: str,
        negative_prompt: str | None,
        size: tuple[int, int],
        frames: int,
        seed: int,
        on_step: Callable[[float], None],
        previews: JobControl | None = None,
    ) -> list[Frame]:
        """One model call: `frames` frames at `size` (native), conditioned on `images` (the
        pipeline's image arguments, already at `size`). `on_step` gets the fraction of steps
        done and may raise to cancel; `previews`, when it shows them, is shown the middle frame
        of the latents as they are denoised (pipelines/diffusion/previews.py)."""
        options = self.spec.options
        steps = int(options.get("steps", 30))
        arguments: dict[str, Any] = {
            **images,
            "prompt": prompt,
            "negative_prompt": negative_prompt or options.get("negative_prompt"),
            "width": size[0],
            "height": size[1],
            "num_frames": frames,
            "num_inference_steps": steps,
            "guidance_scale": float(options.get("guidance", 5.0)),
            "output_type": "np",
        }
        if "frame_rate" in self._accepted:  # LTX conditions on the rate it should move at
            arguments["frame_rate"] = self.geometry.fps
        if "max_sequence_length" in options:
            arguments["max_sequence_length"] = int(options["max_sequence_length"])

        factors = factors_for(self.spec.family, self.spec.pipeline)
        latent_frames = (frames - 1) // self.geometry.frame_multiple + 1

        def step_end(pipe: Any, step: int, timestep: Any, tensors: dict[str, Any]) -> dict:
            # A multistep scheduler may take more timesteps than `steps`; the pipeline knows.
            total = int(getattr(pipe, "num_timesteps", 0) or steps)
            on_step(min(1.0, (step + 1) / total))
            latents = tensors.get("latents")
            if (
                factors is not None
                and latents is not None
                and isinstance(previews, PreviewControl)
                and previews.wants_preview()
            ):
                aspect = size[0] / size[1]
                image = latent_preview(latents[0], factors, aspect, latent_frames)
                if image is not None:
                    previews.preview(image)
            return tensors

        try:
            return self._attempt(arguments, seed, step_end)
        except Exception as error:
            if not is_out_of_memory(error):
                raise
            log.warning(
                "out of device memory in %s; other models released, retrying once", self.spec.model
            )
        self.cache.release_unused(self.spec)
        try:
            return self._attempt(arguments, seed, step_end)
        except Exception as error:
            if not is_out_of_memory(error):
                raise
            self.cache.release_unused(self.spec)
            raise OutOfDeviceMemory(
                f"{self.spec.model} ran out of device memory for {frames} frames at "
                f"{size[0]}x{size[1]}, also after freeing the cache"
            ) from error

    def _attempt(
        self, arguments: dict[str, Any], seed: int, step_end: Callable[..., dict]
    ) -> list[Frame]:
        with self.cache.pipeline_for(self.spec) as pipe:
            # A fresh generator per attempt: a retry draws the same noise as the first try.
            generator = generator_for(seed, self.cache.device)
            result = self.invoke(
                pipe, arguments | {"generator": generator, "callback_on_step_end": step_end}
            )
        return _to_frames(result.frames[0])

    def invoke(self, pipe: Any, arguments: dict[str, Any]) -> Any:
        """The diffusers call itself (tests replace it to simulate running out of memory)."""
        return pipe(**arguments)


def _to_frames(video: Any) -> list[Frame]:
    """A pipeline's `np` output (frames, height, width, 3) in [0, 1] as 8-bit frames."""
    array = np.asarray(video, dtype=np.float32)
    return [np.clip(frame * 255.0 + 0.5, 0, 255).astype(np.uint8) for frame in array]


def fit(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """`image` covering `size` (scaled and centre-cropped), as the model's input."""
    return Image.fromarray(cover(image, *size))
