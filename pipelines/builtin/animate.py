"""The builtin image-to-video pipeline: 2.5D camera moves over depth layers, plus ambience.

The still is cut into far, middle and near layers (`depth_layers.py`); a virtual camera then
zooms, dollies, pans, tilts, orbits, pushes past or drifts as the prompt asks (`video_prompt.py`),
moving each layer by its own parallax, and the prompt's ambient effects are drawn on top
(`ambience.py`). The first frame is the image itself, except for zoom-out and pull-back moves,
which end on it instead: a camera cannot back away from a picture without inventing its
surroundings.

Every layer transform keeps the farthest layer covering the frame (it is inpainted behind the
nearer ones and grows just enough to cover any shift), so no frame shows a border. Frames are
rendered one at a time and streamed to the encoder.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from pipelines.base import AnimateInput, JobControl, VideoOutput
from pipelines.builtin import ambience
from pipelines.builtin.depth_layers import (
    LAYER_NEARNESS,
    SceneLayers,
    push_pull_fill,
    split_layers,
)
from pipelines.builtin.easing import ease_in_out, smoothstep
from pipelines.builtin.video_prompt import VideoDirections, parse_directions
from pipelines.media.framing import cover
from pipelines.media.mp4 import FPS, Mp4Writer, audio_samples_for, frame_count_for
from pipelines.media.soundtrack import compose_soundtrack

# OpenCV's stubs type every result as a generic array, so these aliases document intent only.
Float = NDArray[Any]  # float32 planes and images

PREPARE_SHARE = 0.08
FRAMES_PER_REPORT = 6
# A prompt naming no move gets a slow push in; when the negative prompt forbids that, a drift.
DEFAULT_MOVES = ("dolly_in", "drift")
MAX_SOURCE_SCALE = 2.0  # layers are kept at up to this multiple of the output size, for zooms
COVER_MARGIN = 1.002  # a hair more than exact cover, so edge pixels never sample outside
PUSH_PAST_FADE = (1.45, 1.9)  # the nearest layer fades out between these scales as we pass it
CLOUD_SPEED = 0.012  # frame widths per second
AUTUMN_WORDS = {"autumn", "leaves", "fall", "foliage"}
CLOUD_DETAIL_SIGMA = 0.03  # of the long side: finer than this is cloud, coarser is sky gradient
SUN_PERCENTILE = 97.0  # of the sky's lightness: above it is the sun or moon, which stays


@dataclass(frozen=True)
class CameraPose:
    """Where the camera is at one instant, relative to where it took the picture.

    `zoom` scales every layer alike (focal length); `forward` moves towards the scene, so near
    layers grow more than far ones; `truck_*` moves sideways, shifting near layers more (in
    frame widths and heights for a layer of nearness 1); `pan_*` turns the camera, shifting every
    layer alike.
    """

    zoom: float = 1.0
    forward: float = 0.0
    truck_x: float = 0.0
    truck_y: float = 0.0
    pan_x: float = 0.0
    pan_y: float = 0.0

    def layer_scale(self, nearness: float) -> float:
        return self.zoom / (1.0 - self.forward * nearness)

    def layer_shift(self, nearness: float, width: int, height: int) -> tuple[float, float]:
        return (
            (self.pan_x + self.truck_x * nearness) * width,
            (self.pan_y + self.truck_y * nearness) * height,
        )


def _move_pose(move: str, amount: float, progress: float) -> CameraPose:
    """One move, `amount` strong (1 for a steady 6 s move), `progress` of the way through."""
    p = progress * amount
    back = (1.0 - progress) * amount  # moves that end on the picture rather than start on it
    match move:
        case "zoom_in":
            return CameraPose(zoom=1.25**p)
        case "zoom_out":
            return CameraPose(zoom=1.25**back)
        case "dolly_in":
            return CameraPose(forward=0.17 * p)
        case "dolly_out":
            return CameraPose(forward=0.17 * back)
        case "push_past":
            return CameraPose(forward=0.45 * p)
        case "pan_left":
            return CameraPose(pan_x=0.07 * p)
        case "pan_right":
            return CameraPose(pan_x=-0.07 * p)
        case "tilt_up":
            return CameraPose(pan_y=0.06 * p)
        case "tilt_down":
            return CameraPose(pan_y=-0.06 * p)
        case "orbit_left" | "orbit_right":
            # Travel sideways while turning back towards the middle layer: near and far layers
            # slide in opposite directions around it.
            side = 0.12 * p * (1.0 if move == "orbit_left" else -1.0)
            return CameraPose(truck_x=side, pan_x=-side * 0.5, forward=0.03 * p)
        case "drift":
            return CameraPose(truck_x=0.035 * p, truck_y=-0.012 * p)
    raise ValueError(f"unknown camera move {move!r}")


def camera_pose(directions: VideoDirections, duration: float, progress: float) -> CameraPose:
    """All the prompt's moves at once, eased; longer clips travel a little further."""
    amount = directions.speed * min(max(math.sqrt(duration / 6.0), 0.6), 1.4)
    eased = ease_in_out(progress)
    pose = CameraPose()
    for move in directions.moves:
        part = _move_pose(move, amount, eased)
        pose = CameraPose(
            zoom=pose.zoom * part.zoom,
            forward=pose.forward + part.forward,
            truck_x=pose.truck_x + part.truck_x,
            truck_y=pose.truck_y + part.truck_y,
            pan_x=pose.pan_x + part.pan_x,
            pan_y=pose.pan_y + part.pan_y,
        )
    return pose


def covering(pose: CameraPose, far_nearness: float, width: int, height: int) -> CameraPose:
    """`pose`, zoomed in just enough that the farthest layer still covers the frame."""
    scale = pose.layer_scale(far_nearness)
    shift_x, shift_y = pose.layer_shift(far_nearness, width, height)
    needed = COVER_MARGIN * max(
        1.0, 1.0 + 2 * abs(shift_x) / width, 1.0 + 2 * abs(shift_y) / height
    )
    if scale >= needed:
        return pose
    return replace(pose, zoom=pose.zoom * needed / scale)


def layer_matrix(
    pose: CameraPose, nearness: float, width: int, height: int, source_scale: float
) -> Float:
    """The affine map from a layer's source pixels to the frame, scaling about its centre."""
    scale = pose.layer_scale(nearness)
    shift_x, shift_y = pose.layer_shift(nearness, width, height)
    return np.array(
        [
            [scale / source_scale, 0.0, width / 2 * (1 - scale) + shift_x],
            [0.0, scale / source_scale, height / 2 * (1 - scale) + shift_y],
        ]
    )


class SceneRenderer:
    """Composes one frame at a time from the layers, the camera pose and the effects."""

    def __init__(
        self,
        scene: SceneLayers,
        width: int,
        height: int,
        source_scale: float,
        effects: tuple[str, ...],
        seed: int,
        autumn: bool,
    ) -> None:
        self.width, self.height = width, height
        self.source_scale = source_scale
        self.layers = scene.layers
        self.far_nearness = scene.layers[0].nearness
        self.effects = effects
        self.seed = seed
        far = scene.layers[0].rgba
        self.cloud_detail: Float | None = None
        self.sky: Float | None = None
        if "clouds" in effects and scene.sky.mean() > 0.05:
            # Clouds drift inside the sky: only the sky's fine structure moves, not its gradient
            # or the sun, and the far layer keeps the rest.
            sky_colour = push_pull_fill(far[..., :3].astype(np.float32), (scene.sky > 0.5) * 1.0)
            sigma = CLOUD_DETAIL_SIGMA * max(far.shape[:2])
            detail = sky_colour - cv2.GaussianBlur(sky_colour, (0, 0), sigma)
            # The brightest of the sky is the sun or moon and its glow: it stays put.
            lightness = sky_colour.mean(axis=2)
            brightest = lightness > np.percentile(lightness[scene.sky > 0.5], SUN_PERCENTILE)
            sun = cv2.GaussianBlur(brightest.astype(np.float32), (0, 0), sigma)
            detail *= (1.0 - np.clip(sun * 8.0, 0.0, 1.0))[..., None]
            without = far[..., :3] - detail * scene.sky[..., None]
            far = np.dstack([np.clip(without + 0.5, 0, 255).astype(np.uint8), far[..., 3]])
            # Four channels warp faster than three.
            self.cloud_detail = np.dstack([detail, np.zeros_like(detail[..., 0])]).astype(
                np.float32
            )
            self.sky = scene.sky
        self.far_rgba = far
        self.water: Float | None = None
        self.water_nearness = 0.0
        if "shimmer" in effects and scene.water.mean() > 0.02:
            self.water = scene.water
            weights = scene.water.sum() + 1e-6
            self.water_nearness = float((scene.water * scene.depth).sum() / weights)
            self.shimmer = ambience.WaterShimmer(width, height, seed)
        rng = np.random.default_rng([seed, 3])
        self.particles = [
            ambience.Particles(name, width, height, rng, autumn=autumn)
            for name in effects
            if name in ambience.PARTICLES
        ]

    def _warp(self, image: NDArray[Any], matrix: Float, border: int) -> NDArray[Any]:
        warped: NDArray[Any] = cv2.warpAffine(
            image, matrix, (self.width, self.height), flags=cv2.INTER_LINEAR, borderMode=border
        )
        return warped

    def frame(self, pose: CameraPose, seconds: float) -> NDArray[Any]:
        """Compose in 8 bits with OpenCV, touching only the rows a layer or effect covers."""
        pose = covering(pose, self.far_nearness, self.width, self.height)
        size = (self.width, self.height, self.source_scale)
        far_matrix = layer_matrix(pose, self.far_nearness, *size)
        canvas = self._warp(self.far_rgba, far_matrix, cv2.BORDER_REPLICATE)
        if self.cloud_detail is not None and self.sky is not None:
            drift = np.array([[0.0, 0.0, CLOUD_SPEED * self.width * seconds], [0.0, 0.0, 0.0]])
            sky = self._warp(self.sky, far_matrix, cv2.BORDER_REPLICATE)
            top, bottom = ambience.rows_covered(sky)
            if top < bottom:
                detail = self._warp(self.cloud_detail, far_matrix + drift, cv2.BORDER_REFLECT)
                band = canvas[top:bottom].astype(np.float32)
                band += detail[top:bottom] * sky[top:bottom, :, None]
                canvas[top:bottom] = np.clip(band + 0.5, 0.0, 255.0)
        for layer in self.layers[1:]:
            opacity = 1.0 - smoothstep(*PUSH_PAST_FADE, pose.layer_scale(layer.nearness))
            if opacity <= 0.0:
                continue
            matrix = layer_matrix(pose, layer.nearness, *size)
            warped = self._warp(layer.rgba, matrix, cv2.BORDER_CONSTANT)
            top, bottom = ambience.rows_covered(warped[..., 3])
            if top >= bottom:
                continue
            alpha = warped[top:bottom, :, 3].astype(np.float32) * (opacity / 255.0)
            canvas[top:bottom] = cv2.blendLinear(
                warped[top:bottom], canvas[top:bottom], alpha, 1.0 - alpha
            )
        rgb = cv2.cvtColor(canvas, cv2.COLOR_RGBA2RGB)
        if self.water is not None:
            water_matrix = layer_matrix(pose, self.water_nearness, *size)
            water = self._warp(self.water, water_matrix, cv2.BORDER_REPLICATE)
            self.shimmer.apply(rgb, water, seconds)
        if "flicker" in self.effects:
            rgb = ambience.flickered(rgb, ambience.flicker_gain(seconds, self.seed))
        if self.particles:
            near = self.layers[-1].nearness
            shift = pose.layer_shift(near, self.width, self.height)
            for particles in self.particles:
                particles.draw(rgb, seconds, pose.layer_scale(near), shift)
        return rgb


def source_scale_for(
    directions: VideoDirections, duration: float, image_size: tuple[int, int], width: int,
    height: int,
) -> float:  # fmt: skip
    """How much larger than the frame to keep the layers: enough for the deepest zoom, never
    more than the image has pixels for (upscaling gains nothing) nor `MAX_SOURCE_SCALE`."""
    deepest = 1.0
    for step in range(11):
        pose = camera_pose(directions, duration, step / 10)
        pose = covering(pose, LAYER_NEARNESS[0], width, height)
        deepest = max(deepest, max(pose.layer_scale(n) for n in LAYER_NEARNESS))
    available = min(image_size[0] / width, image_size[1] / height)
    return max(1.0, min(deepest, available, MAX_SOURCE_SCALE))


class BuiltinAnimate:
    """Image to video with no model: 2.5D parallax camera moves and ambient effects."""

    operation = "animate"

    def run(self, inputs: AnimateInput, control: JobControl) -> VideoOutput:
        if inputs.duration <= 0:
            raise ValueError("duration must be positive")
        width, height = inputs.width, inputs.height
        control.progress(0.0, "reading the prompt")
        directions = parse_directions(inputs.prompt, inputs.negative_prompt, DEFAULT_MOVES)
        frame_count = frame_count_for(inputs.duration)
        seconds = frame_count / FPS
        scale = source_scale_for(directions, seconds, inputs.image.size, width, height)
        source = cover(inputs.image, round(width * scale), round(height * scale))
        control.progress(PREPARE_SHARE * 0.3, "estimating depth")
        scene = split_layers(source)
        autumn = bool(AUTUMN_WORDS & set(re.findall(r"[a-z]+", inputs.prompt.lower())))
        renderer = SceneRenderer(
            scene, width, height, scale, directions.effects, inputs.seed, autumn
        )
        soundtrack = None
        if inputs.audio:
            control.progress(PREPARE_SHARE * 0.7, "composing the soundtrack")
            soundtrack = compose_soundtrack(
                inputs.prompt, audio_samples_for(frame_count), inputs.seed
            )
        with Mp4Writer(inputs.output_path, width, height, frame_count, soundtrack) as writer:
            for index in range(frame_count):
                if index % FRAMES_PER_REPORT == 0:
                    done = PREPARE_SHARE + (1.0 - PREPARE_SHARE) * index / frame_count
                    control.progress(done, f"rendering frame {index + 1} of {frame_count}")
                progress = index / (frame_count - 1) if frame_count > 1 else 0.0
                pose = camera_pose(directions, seconds, progress)
                writer.write(renderer.frame(pose, index / FPS))
        return VideoOutput(
            path=inputs.output_path,
            width=width,
            height=height,
            frame_count=frame_count,
            duration_seconds=seconds,
            has_audio=soundtrack is not None,
            notes=[
                "builtin 2.5D animation: three depth layers from a heuristic depth estimate",
                directions.describe(),
            ],
        )
