"""The builtin transition pipeline: learned in-betweens (RIFE) from the start to the end frame.

Not a cross-fade: every frame is the two ends warped along RIFE's estimated motion to that
instant, then blended where each end is visible. Timing is eased, so the motion starts and lands
softly.

Keyframes first: the instants 1/2, then 1/4 and 3/4, then the eighths are interpolated
recursively, each from its two nearest neighbours, so every later step bridges a small motion,
which RIFE gets right far more often than one large jump. Each output frame then comes from the
two keyframes around it. The network runs at a small internal size (`rife.py`) and its flows are
applied to full-resolution keyframes.

When the two frames show different scenes (the flows cannot explain one by the other), the
in-betweens alone would look like a morph; the prompt's camera move is then laid over them as a
motion path (a zoom through, a whip pan or tilt, a spin) that peaks where the frames change most,
with a rise in the soundtrack there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from pipelines.base import JobControl, TransitionInput, VideoOutput
from pipelines.builtin.easing import ease_in_out, smoothstep
from pipelines.builtin.video_prompt import VideoDirections, parse_directions
from pipelines.media import rife
from pipelines.media.framing import cover
from pipelines.media.mp4 import FPS, Mp4Writer, audio_samples_for, frame_count_for
from pipelines.media.soundtrack import compose_soundtrack

# OpenCV's stubs type every result as a generic array, so these aliases document intent only.
Frame = NDArray[Any]  # 8-bit RGB frames

KEYFRAME_SHARE = 0.2  # of the progress, for the keyframes
KEYFRAME_LEVELS = 3  # halvings: keyframes every 1/8 of the transition
FRAMES_PER_BATCH = 4  # in-betweens computed per network call
# Mean difference (0-1) of the two ends warped to the middle above which RIFE's flows do not
# explain the change: different scenes, which get a motion path.
UNRELATED_DISAGREEMENT = 0.06
ZOOM_THROUGH_PEAK = 0.35  # extra scale at the middle of a zoom through
WHIP_DISTANCE = 0.22  # of the frame, at the cut of a whip pan
SPIN_DEGREES = 10.0
MOTION_BLUR_PER_PIXEL = 0.5  # blur length per pixel of movement per frame


@dataclass(frozen=True)
class MotionPath:
    """A camera move laid over the in-betweens: identity at both ends, strongest in the middle."""

    kind: str  # "zoom", "whip" or "spin"
    direction: tuple[float, float] = (1.0, 0.0)  # of a whip, in frame units
    strength: float = 1.0

    def transform(self, progress: float, width: int, height: int) -> tuple[NDArray[Any], float]:
        """The affine map of the frame at `progress`, and the motion blur length in pixels."""
        centre_x, centre_y = width / 2, height / 2
        swell = math.sin(math.pi * progress) ** 2
        angle, shift_x, shift_y, scale = 0.0, 0.0, 0.0, 1.0
        blur = 0.0
        if self.kind == "zoom":
            scale = 1.0 + ZOOM_THROUGH_PEAK * self.strength * swell
        elif self.kind == "whip":
            # Out one side, in from the other: the content keeps travelling one way.
            travel = (
                smoothstep(0.0, 1.0, 2 * progress)
                if progress < 0.5
                else smoothstep(0.0, 1.0, 2 * progress - 1) - 1
            )
            distance = WHIP_DISTANCE * self.strength
            shift_x = -self.direction[0] * travel * distance * width
            shift_y = -self.direction[1] * travel * distance * height
            speed = 2 * distance * 6 * progress * (1 - progress)  # d(travel)/dt, in frames
            blur = speed * max(width * abs(self.direction[0]), height * abs(self.direction[1]))
            scale = max(1.0 + 2 * abs(shift_x) / width, 1.0 + 2 * abs(shift_y) / height)
        elif self.kind == "spin":
            angle = SPIN_DEGREES * self.strength * math.sin(math.pi * progress)
            radians = math.radians(abs(angle))
            aspect = max(width / height, height / width)
            scale = math.cos(radians) + aspect * math.sin(radians)  # covers the rotated frame
        matrix = cv2.getRotationMatrix2D((centre_x, centre_y), angle, scale * 1.002)
        matrix[0, 2] += shift_x
        matrix[1, 2] += shift_y
        return matrix, blur

    def apply(self, frame: Frame, progress: float, frame_seconds: float) -> Frame:
        height, width = frame.shape[:2]
        matrix, blur_speed = self.transform(progress, width, height)
        moved: Frame = cv2.warpAffine(
            frame, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
        length = round(blur_speed * frame_seconds * MOTION_BLUR_PER_PIXEL)
        if length >= 3:
            along_x = abs(self.direction[0]) >= abs(self.direction[1])
            kernel = (length, 1) if along_x else (1, length)
            moved = cv2.blur(moved, kernel)
        return moved


def motion_path_for(directions: VideoDirections) -> MotionPath | None:
    """The prompt's first move as a transition move; a zoom through when it names none."""
    for move in directions.moves:
        if move in ("pan_left", "pan_right", "tilt_up", "tilt_down"):
            direction = {
                "pan_left": (-1.0, 0.0),
                "pan_right": (1.0, 0.0),
                "tilt_up": (0.0, -1.0),
                "tilt_down": (0.0, 1.0),
            }[move]
            return MotionPath("whip", direction, directions.speed)
        if move in ("orbit_left", "orbit_right"):
            return MotionPath(
                "spin", (-1.0 if move == "orbit_left" else 1.0, 0.0), directions.speed
            )
        if move != "drift":
            return MotionPath("zoom", strength=directions.speed)
    return None


class Keyframes:
    """Full-size frames at instants k/2^levels, built coarse to fine, with network-size copies."""

    def __init__(
        self, start: Frame, end: Frame, network_size: tuple[int, int], warper: rife.FullSizeWarper
    ) -> None:
        self.network_size = network_size
        self.warper = warper
        self.frames: dict[float, Frame] = {0.0: start, 1.0: end}
        self.inputs = {
            0.0: rife.to_network(start, network_size),
            1.0: rife.to_network(end, network_size),
        }
        self.disagreement = 0.0

    def build(self, levels: int, control: JobControl) -> None:
        total = 2**levels - 1
        made = 0
        for level in range(1, levels + 1):
            step = 1.0 / 2**level
            for index in range(1, 2**level, 2):
                instant = index * step
                before, after = instant - step, instant + step
                between = rife.in_betweens(self.inputs[before], self.inputs[after], [0.5])[0]
                if level == 1:
                    self.disagreement = between.disagreement(
                        self._network_image(before), self._network_image(after)
                    )
                frame = self.warper.blend(self.frames[before], self.frames[after], between)
                self.frames[instant] = frame
                self.inputs[instant] = rife.to_network(frame, self.network_size)
                made += 1
                control.progress(KEYFRAME_SHARE * made / total, "interpolating keyframes")

    def _network_image(self, instant: float) -> NDArray[np.float32]:
        return self.inputs[instant][0].permute(1, 2, 0).numpy()

    def around(self, instant: float) -> tuple[float, float]:
        instants = sorted(self.frames)
        after = next(i for i in instants if i >= instant)
        before = max(i for i in instants if i <= instant)
        return before, after


class BuiltinTransition:
    """Start and end frames to video with RIFE in-betweens, on the CPU."""

    operation = "transition"

    def __init__(self) -> None:
        # Loaded when the worker warms up: missing weights are a start-up error, not a failed job.
        rife.load_network()

    def run(self, inputs: TransitionInput, control: JobControl) -> VideoOutput:
        if inputs.duration <= 0:
            raise ValueError("duration must be positive")
        width, height = inputs.width, inputs.height
        control.progress(0.0, "reading the prompt")
        directions = parse_directions(inputs.prompt, inputs.negative_prompt)
        frame_count = frame_count_for(inputs.duration)
        seconds = frame_count / FPS
        start, end = cover(inputs.start, width, height), cover(inputs.end, width, height)
        network_size = rife.internal_size(width, height)
        warper = rife.FullSizeWarper(width, height, network_size)
        keyframes = Keyframes(start, end, network_size, warper)
        keyframes.build(KEYFRAME_LEVELS, control)
        path = None
        if keyframes.disagreement > UNRELATED_DISAGREEMENT:
            path = motion_path_for(directions) or MotionPath("zoom", strength=0.7)
        soundtrack = None
        if inputs.audio:
            soundtrack = compose_soundtrack(
                inputs.prompt,
                audio_samples_for(frame_count),
                inputs.seed,
                rise_at_seconds=seconds / 2,
            )
        instants = [
            ease_in_out(i / (frame_count - 1)) if frame_count > 1 else 0.0
            for i in range(frame_count)
        ]
        with Mp4Writer(inputs.output_path, width, height, frame_count, soundtrack) as writer:
            index = 0
            while index < frame_count:
                done = KEYFRAME_SHARE + (1 - KEYFRAME_SHARE) * index / frame_count
                control.progress(done, f"rendering frame {index + 1} of {frame_count}")
                batch = self._batch(keyframes, instants, index)
                for offset, frame in enumerate(self._render(keyframes, instants, index, batch)):
                    progress = (index + offset) / max(frame_count - 1, 1)
                    writer.write(path.apply(frame, progress, 1 / FPS) if path else frame)
                index += batch
        notes = [
            f"builtin transition: RIFE in-betweens at {network_size[0]}x{network_size[1]} from "
            f"{len(keyframes.frames)} keyframes, applied at {width}x{height}",
            f"frames differ by {keyframes.disagreement:.3f} after motion"
            + (f"; motion path: {path.kind}" if path else "; no motion path needed"),
            directions.describe(),
        ]
        return VideoOutput(
            path=inputs.output_path,
            width=width,
            height=height,
            frame_count=frame_count,
            duration_seconds=seconds,
            has_audio=soundtrack is not None,
            notes=notes,
        )

    @staticmethod
    def _batch(keyframes: Keyframes, instants: list[float], index: int) -> int:
        """How many frames from `index` on lie between the same two keyframes (at most a batch)."""
        span = keyframes.around(instants[index])
        count = 1
        while (
            count < FRAMES_PER_BATCH
            and index + count < len(instants)
            and keyframes.around(instants[index + count]) == span
        ):
            count += 1
        return count

    @staticmethod
    def _render(keyframes: Keyframes, instants: list[float], index: int, count: int) -> list[Frame]:
        before, after = keyframes.around(instants[index])
        if before == after:
            return [keyframes.frames[before]] * count
        locals_ = [(instants[index + k] - before) / (after - before) for k in range(count)]
        betweens = rife.in_betweens(keyframes.inputs[before], keyframes.inputs[after], locals_)
        first, second = keyframes.frames[before], keyframes.frames[after]
        return [keyframes.warper.blend(first, second, between) for between in betweens]
