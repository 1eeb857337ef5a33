"""`make gallery`, videos: regenerate docs/gallery/videos/ from the builtin video pipelines.

Each clip is made at 480p by the same pipeline classes the workers run, from stills painted by
the builtin generator, with fixed seeds; next to it goes a contact sheet of eight frames decoded
back from the MP4 (what a viewer gets, compression included), and README.md lists them with the
pipelines' notes and how long each took.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw

from core.sizes import video_size
from pipelines.base import AnimateInput, GenerateInput, NoControl, TransitionInput, VideoOutput
from pipelines.builtin.animate import BuiltinAnimate
from pipelines.builtin.generate import BuiltinGenerate
from pipelines.builtin.transition import BuiltinTransition

FOLDER = Path(__file__).resolve().parent.parent / "docs" / "gallery" / "videos"
STILL_SIZE = (1280, 720)  # painted larger than the clip, so camera pushes stay sharp
SHEET_FRAMES = 8
SHEET_COLUMNS = 4
CAPTION_HEIGHT = 28
SECONDS = 4.0


@dataclass(frozen=True)
class Clip:
    slug: str
    prompt: str
    stills: tuple[str, ...]  # generator prompts: one to animate, two to transition between
    negative_prompt: str | None = None
    # For a transition between two views of one still: (left, top, width, height) crops.
    views: tuple[tuple[float, float, float, float], ...] = ()


CLIPS = (
    Clip(
        "snowfall-dolly",
        "slow dolly in as snow falls over the mountains",
        ("snowy mountains at dusk",),
    ),
    Clip(
        "lake-pan",
        "gentle pan right across the lake, water shimmering, clouds drifting",
        ("calm lake at sunset with a pine forest",),
    ),
    Clip(
        "city-orbit-rain",
        "orbit around the neon city in the rain",
        ("cyberpunk city skyline at night",),
        negative_prompt="flicker",
    ),
    Clip(
        "forest-fireflies",
        "fly through the misty forest at dusk, fireflies glowing",
        ("misty pine forest at dusk",),
    ),
    Clip(
        "dunes-camera-move",
        "a slow camera move across the dunes",
        ("desert dunes under a blue sky",),
        views=((0.0, 0.1, 0.72, 0.72), (0.28, 0.18, 0.62, 0.62)),
    ),
    Clip(
        "sea-to-city",
        "zoom through from the sea at sunset to the city at night",
        ("calm sea at sunset", "cyberpunk city skyline at night"),
    ),
)


def paint(prompt: str, seed: int) -> Image.Image:
    width, height = STILL_SIZE
    inputs = GenerateInput(prompt=prompt, width=width, height=height, quality="high", seed=seed)
    return BuiltinGenerate().run(inputs, NoControl()).images[0]


def view(image: Image.Image, box: tuple[float, float, float, float]) -> Image.Image:
    left, top, width, height = box
    pixels = (
        round(left * image.width),
        round(top * image.height),
        round((left + width) * image.width),
        round((top + height) * image.height),
    )
    return image.crop(pixels)


def render(clip: Clip, path: Path) -> VideoOutput:
    stills = [paint(prompt, seed=7 + index) for index, prompt in enumerate(clip.stills)]
    if clip.views:
        stills = [view(stills[0], box) for box in clip.views]
    width, height = video_size(stills[0].width, stills[0].height, "480p")
    if len(stills) == 1:
        return BuiltinAnimate().run(
            AnimateInput(
                image=stills[0],
                prompt=clip.prompt,
                duration=SECONDS,
                width=width,
                height=height,
                negative_prompt=clip.negative_prompt,
                seed=7,
                output_path=str(path),
            ),
            NoControl(),
        )
    return BuiltinTransition().run(
        TransitionInput(
            start=stills[0],
            end=stills[1],
            prompt=clip.prompt,
            duration=SECONDS,
            width=width,
            height=height,
            negative_prompt=clip.negative_prompt,
            seed=7,
            output_path=str(path),
        ),
        NoControl(),
    )


def contact_sheet(video: Path, caption: str) -> Image.Image:
    """Eight evenly spaced frames of the decoded clip, in two rows, under the prompt."""
    with av.open(str(video)) as container:
        frames = [frame.to_image() for frame in container.decode(video=0)]
    chosen = np.linspace(0, len(frames) - 1, SHEET_FRAMES).round().astype(int)
    tile_width, tile_height = frames[0].width // 2, frames[0].height // 2
    rows = -(-SHEET_FRAMES // SHEET_COLUMNS)
    sheet = Image.new(
        "RGB", (tile_width * SHEET_COLUMNS, CAPTION_HEIGHT + tile_height * rows), "white"
    )
    draw = ImageDraw.Draw(sheet)
    draw.text((8, 8), caption, fill="black")
    for place, index in enumerate(chosen):
        tile = frames[index].resize((tile_width, tile_height), Image.Resampling.LANCZOS)
        x = (place % SHEET_COLUMNS) * tile_width
        y = CAPTION_HEIGHT + (place // SHEET_COLUMNS) * tile_height
        sheet.paste(tile, (x, y))
        draw.text((x + 6, y + 4), f"{index / 24:.2f} s", fill="white")
    return sheet


def main() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Builtin video gallery",
        "",
        "Made by `make gallery` (`tools/video_gallery.py`): 480p, "
        f"{SECONDS:g} s each, from stills painted by the builtin generator. Each sheet shows "
        "eight frames decoded back from the MP4.",
        "",
    ]
    for clip in CLIPS:
        path = FOLDER / f"{clip.slug}.mp4"
        started = time.perf_counter()
        output = render(clip, path)
        seconds = time.perf_counter() - started
        caption = clip.prompt + (
            f"  (negative: {clip.negative_prompt})" if clip.negative_prompt else ""
        )
        contact_sheet(path, caption).save(FOLDER / f"{clip.slug}.png", optimize=True)
        kind = "transition" if len(clip.stills) > 1 or clip.views else "animate"
        print(f"{clip.slug}: {kind}, {seconds:.1f} s, {path.stat().st_size // 1024} KiB")
        lines += [
            f"## {clip.slug}",
            "",
            f'{kind}: "{clip.prompt}"'
            + (f', negative prompt "{clip.negative_prompt}"' if clip.negative_prompt else ""),
            f"from {' / '.join(clip.stills)}"
            + (" (two views of one still)" if clip.views else "")
            + f"; {output.width}x{output.height}, {output.frame_count} frames, "
            f"{path.stat().st_size // 1024} KiB, rendered in {seconds:.1f} s.",
            "",
            *[f"- {note}" for note in output.notes],
            "",
            f"[{clip.slug}.mp4]({clip.slug}.mp4)",
            "",
            f"![{clip.prompt}]({clip.slug}.png)",
            "",
        ]
    (FOLDER / "README.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
