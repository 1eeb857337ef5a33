"""From a video model's frames to the contract's clip: retimed to 24 fps with RIFE in-betweens,
scaled to the exact size, written as MP4 with the soundtrack.

An output frame that falls between two model frames is an in-between of them; animate keeps the
model's timing, a transition spreads its frames over the whole duration so it ends on the end
frame. RIFE, the MP4 writer and the soundtrack are the ones the builtin pipelines use
(`pipelines/media/`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from pipelines.base import JobControl, VideoOutput
from pipelines.diffusion.video_model import Frame
from pipelines.media import rife
from pipelines.media.framing import cover
from pipelines.media.mp4 import FPS, Mp4Writer, audio_samples_for
from pipelines.media.soundtrack import compose_soundtrack

GENERATION_SHARE = 0.8  # of the progress, for the denoising steps; the rest is retime + encode
# An output instant this close to a model frame shows that frame rather than an in-between.
SNAP = 0.02
FRAMES_PER_BATCH = 4  # in-betweens per RIFE call (as the builtin transition)


def step_reporter(
    control: JobControl, segment: int, segments: int, message: str
) -> Callable[[float], None]:
    """Progress over the generation share for one of `segments` model calls."""

    def report(done: float) -> None:
        fraction = GENERATION_SHARE * (segment + done) / segments
        control.progress(fraction, message)

    return report


def soundtrack_for(
    prompt: str, frame_count: int, seed: int, audio: bool, rise_at_seconds: float | None = None
) -> NDArray[np.float32] | None:
    if not audio:
        return None
    return compose_soundtrack(prompt, audio_samples_for(frame_count), seed, rise_at_seconds)


def model_time_positions(frame_count: int, fps: float) -> list[float]:
    """Where each 24 fps output frame falls among model frames made at `fps`: the model's own
    timing (animate; the clip's frames past the duration go unused)."""
    return [index * fps / FPS for index in range(frame_count)]


def spanning_positions(frame_count: int, model_frames: int) -> list[float]:
    """Output frames spread from the first model frame to the last (transition: the clip must
    end on the end frame, whatever the model's rate)."""
    if frame_count == 1:
        return [0.0]
    return [index * (model_frames - 1) / (frame_count - 1) for index in range(frame_count)]


def write_clip(
    frames: list[Frame],
    positions: list[float],
    output_path: str,
    size: tuple[int, int],
    soundtrack: NDArray[np.float32] | None,
    control: JobControl,
    note: str,
) -> VideoOutput:
    """Encode one frame per position (an index into `frames`, fractional between two) at
    `size`: the model frame where a position falls on one, a RIFE in-between elsewhere. RIFE's
    flows are found at about the model's size (there is no finer motion to find) and applied to
    the frames at the output size. `note` says how the model made `frames`."""
    width, height = size
    full = _FullSizeFrames(frames, size)
    native_short_side = min(frames[0].shape[:2])
    network_size = rife.internal_size(
        width, height, min(rife.INTERNAL_SHORT_SIDE, native_short_side)
    )
    warper = rife.FullSizeWarper(width, height, network_size)
    frame_count = len(positions)
    with Mp4Writer(output_path, width, height, frame_count, soundtrack) as writer:
        written = 0
        for batch in _batches(positions):
            done = GENERATION_SHARE + (1 - GENERATION_SHARE) * written / frame_count
            control.progress(done, "retiming to 24 fps")
            written += len(batch)
            first = math.floor(batch[0])
            instants = [position - first for position in batch]
            if all(t < SNAP for t in instants):
                for _ in batch:
                    writer.write(full[first])
                continue
            before, after = full[first], full[first + 1]
            pair = (rife.to_network(before, network_size), rife.to_network(after, network_size))
            betweens = iter(rife.in_betweens(*pair, [t for t in instants if SNAP <= t <= 1 - SNAP]))
            for t in instants:
                if t < SNAP:
                    writer.write(before)
                elif t > 1 - SNAP:
                    writer.write(after)
                else:
                    writer.write(warper.blend(before, after, next(betweens)))
    return VideoOutput(
        path=output_path,
        width=width,
        height=height,
        frame_count=frame_count,
        duration_seconds=frame_count / FPS,
        has_audio=soundtrack is not None,
        notes=[f"{note}; retimed to {frame_count} frames at {FPS} fps, scaled to {width}x{height}"],
    )


def _batches(positions: list[float]) -> Iterator[list[float]]:
    """Consecutive positions between the same two model frames, at most a batch at a time."""
    batch: list[float] = []
    for position in positions:
        if batch and (
            math.floor(position) != math.floor(batch[0]) or len(batch) == FRAMES_PER_BATCH
        ):
            yield batch
            batch = []
        batch.append(position)
    if batch:
        yield batch


class _FullSizeFrames:
    """Model frames scaled to the output size on first use; only the last few are kept."""

    def __init__(self, frames: list[Frame], size: tuple[int, int]) -> None:
        self._frames = frames
        self._size = size
        self._scaled: dict[int, Frame] = {}

    def __getitem__(self, index: int) -> Frame:
        index = min(index, len(self._frames) - 1)
        if index not in self._scaled:
            if len(self._scaled) >= 2:
                del self._scaled[min(self._scaled)]
            self._scaled[index] = cover(Image.fromarray(self._frames[index]), *self._size)
        return self._scaled[index]
