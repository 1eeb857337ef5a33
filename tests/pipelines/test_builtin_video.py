"""The builtin video pipelines, checked on the real MP4s they write, decoded with PyAV.

Container and codec as CONTRACT.md fixes them, exact frame counts and durations, audio only when
asked, no black borders, nothing left behind by a cancel, in-betweens that beat a cross-fade on a
scene with known motion, the negative prompt, the poster and the soundtrack's loudness.
Clips are short and small to keep the suite quick; one checks a real 480p size.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image

from pipelines.base import AnimateInput, Cancelled, TransitionInput, VideoOutput
from pipelines.builtin.animate import BuiltinAnimate
from pipelines.builtin.transition import BuiltinTransition
from pipelines.media.mp4 import AUDIO_RATE, FPS, poster_jpeg
from pipelines.media.soundtrack import compose_soundtrack, integrated_loudness
from tests.support.control import RecordingControl

LUMA = np.array([0.299, 0.587, 0.114])


@dataclass
class Probe:
    codec: str
    pix_fmt: str
    width: int
    height: int
    frames: list[np.ndarray[Any, Any]]
    duration: float
    audio: tuple[str, int, int] | None  # codec, sample rate, channels


def probe(path: str) -> Probe:
    with av.open(path) as container:
        video = container.streams.video[0]
        audio = container.streams.audio[0] if container.streams.audio else None
        audio_facts = None
        if audio is not None:
            context = audio.codec_context
            audio_facts = (context.name, context.sample_rate, context.channels)
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(video)]
        return Probe(
            codec=video.codec_context.name,
            pix_fmt=video.codec_context.pix_fmt,
            width=video.codec_context.width,
            height=video.codec_context.height,
            frames=frames,
            duration=float(video.duration * video.time_base) if video.duration else 0.0,
            audio=audio_facts,
        )


def textured_image(width: int, height: int, seed: int = 0) -> Image.Image:
    """A bright scene with structure at every scale: a sky gradient, hills, blotches, grain.

    Its darkest pixel is far from black, so any black border shows."""
    rng = np.random.default_rng(seed)
    rows = np.linspace(0, 1, height)[:, None, None]
    columns = np.linspace(0, 1, width)[None, :, None]
    sky = np.array([120, 170, 235]) * (1 - rows) + np.array([230, 200, 160]) * rows
    hills = rows > 0.55 + 0.08 * np.sin(columns * 9.0)
    image = np.where(hills, np.array([110, 170, 90]) + 40 * np.sin(columns * 40 + rows * 30), sky)
    blotches = Image.fromarray(rng.integers(0, 255, (height // 8, width // 8), dtype=np.uint8))
    blotch = np.asarray(blotches.resize((width, height), Image.Resampling.BICUBIC), dtype=float)
    image = image + (blotch[..., None] - 128) * 0.25 + rng.normal(0, 6, image.shape)
    return Image.fromarray(np.clip(image, 70, 255).astype(np.uint8))


def animate(tmp_path: Path, **changes: Any) -> tuple[VideoOutput, Probe]:
    tmp_path.mkdir(exist_ok=True)
    inputs = AnimateInput(
        image=textured_image(320, 180),
        prompt="slow dolly in",
        duration=1.0,
        width=256,
        height=144,
        audio=False,
        output_path=str(tmp_path / "animate.mp4"),
    )
    output = BuiltinAnimate().run(replace(inputs, **changes), RecordingControl())
    return output, probe(output.path)


def transition(tmp_path: Path, **changes: Any) -> tuple[VideoOutput, Probe]:
    inputs = TransitionInput(
        start=textured_image(320, 180, seed=1),
        end=textured_image(320, 180, seed=1).transpose(Image.Transpose.FLIP_LEFT_RIGHT),
        prompt="a smooth move",
        duration=1.0,
        width=256,
        height=144,
        audio=False,
        output_path=str(tmp_path / "transition.mp4"),
    )
    output = BuiltinTransition().run(replace(inputs, **changes), RecordingControl())
    return output, probe(output.path)


def assert_contract(output: VideoOutput, clip: Probe, seconds: float, audio: bool) -> None:
    expected_frames = round(FPS * seconds)
    assert clip.codec == "h264"
    assert clip.pix_fmt == "yuv420p"
    assert (clip.width, clip.height) == (output.width, output.height)
    assert len(clip.frames) == expected_frames == output.frame_count
    assert abs(clip.duration - seconds) <= 1 / FPS
    assert output.duration_seconds == pytest.approx(expected_frames / FPS)
    assert output.has_audio is audio
    assert clip.audio == (("aac", AUDIO_RATE, 2) if audio else None)


@pytest.mark.parametrize("audio", [True, False])
def test_animate_writes_the_contract_mp4(tmp_path: Path, audio: bool) -> None:
    output, clip = animate(tmp_path, audio=audio, duration=1.25)
    assert_contract(output, clip, 1.25, audio)


@pytest.mark.parametrize("audio", [True, False])
def test_transition_writes_the_contract_mp4(tmp_path: Path, audio: bool) -> None:
    output, clip = transition(tmp_path, audio=audio)
    assert_contract(output, clip, 1.0, audio)


def test_a_480p_clip_has_its_size(tmp_path: Path) -> None:
    output, clip = animate(tmp_path, image=textured_image(1000, 560), width=848, height=480)
    assert (clip.width, clip.height) == (848, 480)
    assert_contract(output, clip, 1.0, False)


def test_the_mp4_starts_with_its_index_for_streaming(tmp_path: Path) -> None:
    output, _ = animate(tmp_path)
    head = Path(output.path).read_bytes()[:4096]
    assert head.find(b"moov") != -1 and head.find(b"moov") < max(head.find(b"mdat"), 4096)


def assert_no_black_border(frames: list[np.ndarray[Any, Any]]) -> None:
    for index, frame in enumerate(frames):
        luma = frame @ LUMA
        edges = {
            "top": luma[:2],
            "bottom": luma[-2:],
            "left": luma[:, :2],
            "right": luma[:, -2:],
        }
        for side, strip in edges.items():
            assert strip.min() > 30, f"frame {index}: dark pixels along the {side} edge"


@pytest.mark.parametrize(
    "prompt",
    ["fast pan left", "orbit around quickly", "zoom out", "fly through fast", "tilt up", "drift"],
)
def test_no_frame_shows_a_black_border(tmp_path: Path, prompt: str) -> None:
    _, clip = animate(tmp_path, prompt=prompt, image=textured_image(400, 180))  # also cropped
    assert_no_black_border(clip.frames)


def test_transition_frames_have_no_black_border(tmp_path: Path) -> None:
    _, clip = transition(tmp_path, prompt="whip pan left")
    assert_no_black_border(clip.frames)


@pytest.mark.parametrize("pipeline", ["animate", "transition"])
def test_cancel_mid_render_leaves_no_file(tmp_path: Path, pipeline: str) -> None:
    target = tmp_path / "out.mp4"
    control = RecordingControl(cancel_after=5)
    with pytest.raises(Cancelled):
        if pipeline == "animate":
            BuiltinAnimate().run(
                AnimateInput(
                    image=textured_image(320, 180),
                    prompt="zoom in",
                    duration=2.0,
                    width=256,
                    height=144,
                    output_path=str(target),
                ),
                control,
            )
        else:
            BuiltinTransition().run(
                TransitionInput(
                    start=textured_image(320, 180),
                    end=textured_image(320, 180, seed=3),
                    prompt="zoom",
                    duration=2.0,
                    width=256,
                    height=144,
                    output_path=str(target),
                ),
                control,
            )
    assert list(tmp_path.iterdir()) == []


def test_progress_rises_within_the_animations_own_work(tmp_path: Path) -> None:
    control = RecordingControl()
    BuiltinAnimate().run(
        AnimateInput(
            image=textured_image(320, 180),
            prompt="pan right",
            duration=1.0,
            width=256,
            height=144,
            output_path=str(tmp_path / "a.mp4"),
        ),
        control,
    )
    assert control.fractions == sorted(control.fractions)
    assert min(control.fractions) >= 0.0 and max(control.fractions) <= 1.0


def moving_square_scene(offset: int, size: int = 256) -> np.ndarray[Any, Any]:
    """A patterned square `offset` pixels from the left over a softly textured background."""
    rng = np.random.default_rng(5)
    blobs = Image.fromarray(rng.integers(0, 255, (6, 6, 3), dtype=np.uint8))
    scene = np.asarray(blobs.resize((size, size), Image.Resampling.BICUBIC)).copy()
    tiles = np.indices((64, 64)).sum(axis=0) // 8 % 2
    square = np.where(tiles[..., None] == 1, [240, 200, 40], [30, 40, 160]).astype(np.uint8)
    scene[96:160, offset : offset + 64] = square
    return scene


def psnr(first: np.ndarray[Any, Any], second: np.ndarray[Any, Any]) -> float:
    error = np.mean((first.astype(float) - second.astype(float)) ** 2)
    return float(10 * np.log10(255.0**2 / max(error, 1e-9)))


def test_the_middle_frame_is_a_real_in_between_not_a_blend(tmp_path: Path) -> None:
    start, end = moving_square_scene(48), moving_square_scene(112)
    truth = moving_square_scene(80)
    blend = ((start.astype(float) + end) / 2).astype(np.uint8)
    frame_count = 25  # an odd count puts a frame exactly half-way
    output, clip = transition(
        tmp_path,
        start=Image.fromarray(start),
        end=Image.fromarray(end),
        width=256,
        height=256,
        duration=frame_count / FPS,
    )
    assert output.frame_count == frame_count
    middle = clip.frames[frame_count // 2]
    assert psnr(middle, truth) > psnr(blend, truth) + 3.0


def zoomed(frame: np.ndarray[Any, Any], factor: float) -> np.ndarray[Any, Any]:
    height, width = frame.shape[:2]
    crop_width, crop_height = width / factor, height / factor
    box = ((width - crop_width) / 2, (height - crop_height) / 2)
    crop = (box[0], box[1], box[0] + crop_width, box[1] + crop_height)
    image = Image.fromarray(frame).resize((width, height), Image.Resampling.BILINEAR, box=crop)
    return np.asarray(image)


def estimated_zoom(first: np.ndarray[Any, Any], last: np.ndarray[Any, Any]) -> float:
    """The centred zoom from `first` that best matches `last`."""
    factors = np.arange(1.0, 1.31, 0.02)
    return float(max(factors, key=lambda factor: psnr(last, zoomed(first, factor))))


def test_the_negative_prompt_removes_a_named_motion(tmp_path: Path) -> None:
    asked, zooming = animate(tmp_path / "a", prompt="zoom in", duration=2.0)
    refused, still = animate(tmp_path / "b", prompt="zoom in", negative_prompt="zoom", duration=2.0)
    assert "zoom in" in asked.notes[-1]
    assert "removed by the negative prompt: zoom in" in refused.notes[-1]
    assert estimated_zoom(zooming.frames[0], zooming.frames[-1]) >= 1.1
    assert estimated_zoom(still.frames[0], still.frames[-1]) <= 1.02


def test_the_poster_is_a_jpeg_of_a_frame(tmp_path: Path) -> None:
    output, _ = animate(tmp_path)
    poster = Image.open(io.BytesIO(poster_jpeg(output.path)))
    assert poster.format == "JPEG"
    assert poster.size == (output.width, output.height)


def test_the_soundtrack_is_normalised_and_starts_and_ends_silent() -> None:
    track = compose_soundtrack("stormy sea at night", 3 * AUDIO_RATE, seed=4, rise_at_seconds=1.5)
    assert track.shape == (2, 3 * AUDIO_RATE) and track.dtype == np.float32
    assert integrated_loudness(track.astype(float)) == pytest.approx(-16.0, abs=1.0)
    assert np.abs(track).max() < 1.0
    assert np.abs(track[:, :8]).max() < 1e-3 and np.abs(track[:, -8:]).max() < 1e-3


def test_the_same_inputs_give_the_same_clip(tmp_path: Path) -> None:
    _, first = animate(tmp_path / "a", prompt="snow falling, pan left")
    _, second = animate(tmp_path / "b", prompt="snow falling, pan left")
    assert all(np.array_equal(a, b) for a, b in zip(first.frames, second.frames, strict=True))


def test_audio_length_matches_the_video(tmp_path: Path) -> None:
    output, _ = animate(tmp_path, audio=True, duration=1.5)
    with av.open(output.path) as container:
        audio = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(audio))
        length = float(audio.duration * audio.time_base) if audio.duration else samples / AUDIO_RATE
    assert abs(length - 1.5) <= 1 / FPS
    assert Fraction(output.frame_count, FPS) == Fraction(3, 2)
