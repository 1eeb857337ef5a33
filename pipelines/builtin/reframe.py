"""The builtin reframe (resize to another aspect ratio): keep the whole source, extend the scene.

The source is scaled to fit inside the target and centred; the new area is filled by
content-aware extension, in three layers blended by the distance from the source:

- near the source, the source mirrored across its edge (so colours and lines continue without a
  step), with the mirror's coordinates warped by smooth noise so that it does not read as a
  reflection, and blurred more the farther it reaches;
- far from it, the source's edge colours carried outwards by inpainting (`cv2.inpaint`, Telea)
  on a small copy, then smoothed: sky stays sky, ground stays ground;
- everywhere, fine grain matched to the source's own, so no part of the new area is flat.

The fill is computed on a copy of at most `WORK_PIXELS` pixels and enlarged; only a band along
the seam is redone at full size, from the full-size source, so the join is as sharp as the
source. A 4K 8:1 job (11584x1456) holds about 400 MB.
"""

from __future__ import annotations

import logging
import math

import cv2
import numpy as np

from pipelines.base import ImageOutput, JobControl, ReframeInput, offer_preview
from pipelines.builtin.imaging import (
    Float,
    blurred,
    log_peak_memory,
    luma,
    resized,
    to_array,
    to_image,
)
from pipelines.builtin.stages import Stages
from pipelines.builtin.superres import shared_super_resolution
from pipelines.builtin.upscale import enlarge
from pipelines.media.framing import placement

log = logging.getLogger(__name__)

WORK_PIXELS = 1_100_000
# Smaller enlargements of the source are left to Lanczos: the model costs as much for 1.4x as
# for 4x (a 4K 8:1 reframe of a 1K square would take 20 seconds instead of 2).
MODEL_FROM = 2.0
INPAINT_SIDE = 160  # longer side of the copy the far field is inpainted on
# In units of the source's size across the seam: how far the mirror reaches before the far
# field takes over, and how fast it blurs on the way.
MIRROR_REACH = 0.35
MIRROR_BLUR = 0.18
# Sideways a mirrored landscape stays plausible (the horizon continues) far longer than above
# or below it, so horizontal distance counts for less, and for less still in the blur.
SIDEWAYS = 0.2
SIDEWAYS_BLUR = 0.1
# Lights (a sun, a moon) are compact and bright: a mirror would repeat them, so features of
# about this size (in units of the source's shorter side) are taken out of the mirrored copy.
LIGHT_SIZE = 0.2
WARP = 0.06  # how far the mirror's coordinates wander, per unit of distance
TEXTURE_BAND = 0.2  # the share of the source along each edge whose fine texture is carried on
BLUR_LEVELS = (0.0, 2.0, 6.0, 16.0, 40.0)  # sigmas in work pixels the blur varies between
SEAM_BAND = 0.08  # share of the source's size redone at full size along the seam
STRIP_ROWS = 512  # full-size work goes in strips of rows to bound memory
MAX_GRAIN = 0.012


def _distances(
    width: int, height: int, box: tuple[int, int, int, int]
) -> tuple[Float, Float, Float, Float]:
    """Per pixel, the signed offset from the box's edge along x and y (0 inside) and the box
    coordinates each pixel mirrors to, before warping."""
    left, top, box_width, box_height = box
    x = np.arange(width, dtype=np.float32) - left
    y = np.arange(height, dtype=np.float32) - top
    outside_x = np.maximum(-x, 0) + np.maximum(x - (box_width - 1), 0)
    outside_y = np.maximum(-y, 0) + np.maximum(y - (box_height - 1), 0)
    return outside_x, outside_y, x, y


def _smooth_noise(rng: np.random.Generator, width: int, height: int, cells: int) -> Float:
    """Smooth random values in about [-1, 1]: a coarse random grid, enlarged bicubically."""
    aspect = width / height
    grid_width = max(2, round(cells * math.sqrt(aspect)))
    grid_height = max(2, round(cells / math.sqrt(aspect)))
    grid = rng.uniform(-1.0, 1.0, (grid_height, grid_width)).astype(np.float32)
    return np.asarray(
        cv2.resize(grid, (width, height), interpolation=cv2.INTER_CUBIC), dtype=np.float32
    )


def _fill(
    source: Float, width: int, height: int, box: tuple[int, int, int, int], seed: int
) -> Float:
    """The whole canvas at work size: source in the box, the extension around it."""
    rng = np.random.default_rng([seed, width, height])
    _, _, box_width, box_height = box
    outside_x, outside_y, x, y = _distances(width, height, box)
    # Distances in units of the source's size across each seam.
    vertical = (outside_y / box_height)[:, None] ** 2
    reach = np.sqrt((outside_x * (SIDEWAYS / box_width))[None, :] ** 2 + vertical)
    blur_reach = np.sqrt((outside_x * (SIDEWAYS_BLUR / box_width))[None, :] ** 2 + vertical)
    unit = float(min(box_width, box_height))

    # Near field: the mirrored source, warped more with distance (BORDER_REFLECT_101 mirrors
    # any coordinate back into the box, however far out).
    warp_x = _smooth_noise(rng, width, height, 6) * (reach * WARP * unit)
    warp_y = _smooth_noise(rng, width, height, 6) * (reach * WARP * unit * 0.35)
    map_x = np.asarray(x[None, :] + warp_x, np.float32)
    map_y = np.asarray(y[:, None] + warp_y, np.float32)
    lightless = _without_lights(source)
    mirrored = np.asarray(
        cv2.remap(lightless, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101),
        np.float32,
    )
    mirrored = _variable_blur(mirrored, blur_reach * MIRROR_BLUR * unit)

    # Far field: the edge colours carried out by inpainting on a small copy, then smoothed.
    far = _inpainted(source, width, height, box)
    far = blurred(far, 0.05 * unit)

    near = np.exp(-((reach / MIRROR_REACH) ** 2))[..., None]
    canvas = far + (mirrored - far) * near
    # Low-frequency light and shade, so wide far fields are not a bare gradient.
    shade = _smooth_noise(rng, width, height, 10) * np.float32(0.04)
    canvas *= (1.0 + shade * (1.0 - near[..., 0]))[..., None]
    # And the fine texture along the source's edges (stars, grain, foliage) carried on.
    texture = (lightless - blurred(lightless, 1.5)) * _away_from_edges(lightless)[..., None]
    band = max(2, round(TEXTURE_BAND * unit))
    texture_x = np.broadcast_to(_band_reflect(x, box_width, band)[None, :], (height, width))
    texture_y = np.broadcast_to(_band_reflect(y, box_height, band)[:, None], (height, width))
    carried = cv2.remap(
        texture,
        np.ascontiguousarray(texture_x, np.float32),
        np.ascontiguousarray(texture_y, np.float32),
        cv2.INTER_NEAREST,
        borderMode=cv2.BORDER_REFLECT_101,
    )
    carried = np.asarray(carried, np.float32)
    # Folding repeats a line that crosses the band into an endless stripe: take away what runs
    # straight along the folding direction, which leaves points and grain.
    if box_width < width:
        carried -= np.asarray(cv2.blur(carried, (2 * band + 1, 1)), np.float32)
    if box_height < height:
        carried -= np.asarray(cv2.blur(carried, (1, 2 * band + 1)), np.float32)
    return canvas + carried * (1.0 - near)


def _away_from_edges(picture: Float) -> Float:
    """1 where the picture has no edge at a scale of a few pixels, falling to 0 on edges: the
    fine texture there (stars, grain) can be repeated, an edge's outline cannot."""
    smooth = luma(blurred(picture, 2.0))
    slope_x = np.asarray(cv2.Sobel(smooth, cv2.CV_32F, 1, 0, ksize=3), np.float32)
    slope_y = np.asarray(cv2.Sobel(smooth, cv2.CV_32F, 0, 1, ksize=3), np.float32)
    slope = np.sqrt(slope_x * slope_x + slope_y * slope_y) * np.float32(0.125)
    return np.clip(1.0 - (slope - 0.004) / 0.01, 0.0, 1.0)


def _band_reflect(position: Float, size: int, band: int) -> Float:
    """Coordinates outside `[0, size)` folded back and forth inside the band along the edge
    they left by, so that only the edge's own texture is repeated outwards."""
    band = min(band, size)
    before = np.mod(-position, 2 * band)
    before = np.where(before < band, before, 2 * band - before)
    after = np.mod(position - (size - 1), 2 * band)
    after = (size - 1) - np.where(after < band, after, 2 * band - after)
    return np.where(position < 0, before, np.where(position > size - 1, after, position))


def _without_lights(source: Float) -> Float:
    """The source with its compact bright features (sun, moon) painted out, for mirroring.

    A morphological opening removes bright features smaller than its kernel: where an opening
    just larger than a light differs from one much smaller (which keeps lit windows and stars),
    there is a light, and the larger opening (the sky around it, glow included) replaces it.
    """
    height, width = source.shape[:2]
    shrink = max(1, round(min(width, height) / 128))  # large features: a small copy will do
    small = resized(source, max(1, width // shrink), max(1, height // shrink))
    side = max(3, round(LIGHT_SIZE * min(small.shape[:2])) | 1)

    def opened(size: int) -> Float:
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size))
        return np.asarray(cv2.morphologyEx(small, cv2.MORPH_OPEN, kernel), np.float32)

    background = opened(side)
    lights = luma(np.clip(opened(max(3, side // 4 | 1)) - background, 0.0, None))
    mask = np.clip((lights - 0.02) / 0.06, 0.0, 1.0)
    # Grown and feathered, so no rim of the light survives the enlargement.
    mask = np.asarray(cv2.dilate(mask, np.ones((3, 3), np.uint8)), np.float32)
    mask = resized(blurred(mask, 1.0), width, height)[..., None]
    return source + (resized(background, width, height) - source) * mask


def _variable_blur(picture: Float, sigma: Float) -> Float:
    """Blur that varies per pixel: a blend of a few fixed blurs, picked by `sigma`."""
    levels = np.array(BLUR_LEVELS, dtype=np.float32)
    position = np.interp(sigma, levels, np.arange(len(levels))).astype(np.float32)
    result = np.zeros_like(picture)
    for index, level in enumerate(BLUR_LEVELS):
        weight = np.clip(1.0 - np.abs(position - index), 0.0, 1.0)
        if not weight.any():
            continue
        result += blurred(picture, level) * weight[..., None]
    return result


def _inpainted(source: Float, width: int, height: int, box: tuple[int, int, int, int]) -> Float:
    left, top, box_width, box_height = box
    shrink = min(1.0, INPAINT_SIDE / max(width, height))
    small_width, small_height = max(2, round(width * shrink)), max(2, round(height * shrink))
    small = np.zeros((small_height, small_width, 3), dtype=np.uint8)
    mask = np.full((small_height, small_width), 255, dtype=np.uint8)
    inner_left, inner_top = round(left * shrink), round(top * shrink)
    inner_width = max(1, min(small_width - inner_left, round(box_width * shrink)))
    inner_height = max(1, min(small_height - inner_top, round(box_height * shrink)))
    inner = resized(source, inner_width, inner_height)
    rows = slice(inner_top, inner_top + inner_height)
    columns = slice(inner_left, inner_left + inner_width)
    small[rows, columns] = np.clip(inner * 255.0 + 0.5, 0, 255).astype(np.uint8)
    mask[rows, columns] = 0
    filled = cv2.inpaint(small, mask, 5, cv2.INPAINT_TELEA)
    return resized(np.asarray(filled, np.float32) / np.float32(255.0), width, height)


def _grain_level(source: Float) -> float:
    """The source's fine-grain strength: the typical size of what a slight blur removes.

    The median (not the spread) of it, so that edges and small bright details do not count.
    """
    grey = luma(source)
    level = 1.4826 * float(np.median(np.abs(grey - blurred(grey, 1.0))))
    return min(level, MAX_GRAIN)  # a busy texture is not grain: never more than film grain


def _compose(
    placed: Float,
    fill: Float,
    box: tuple[int, int, int, int],
    grain: float,
    rng: np.random.Generator,
    stages: Stages,
) -> Float:
    """At full size: the enlarged fill, a sharp mirror band along the seam, grain, the source."""
    height, width = fill.shape[:2]
    left, top, box_width, box_height = box
    outside_x, outside_y, x, y = _distances(width, height, box)
    band = SEAM_BAND * min(box_width, box_height)
    # Mirror coordinates into the box, as integer indices (exact mirror of the full-size source).
    mirror_x = np.abs(np.mod(x + (box_width - 1), 2 * (box_width - 1) or 1) - (box_width - 1))
    mirror_y = np.abs(np.mod(y + (box_height - 1), 2 * (box_height - 1) or 1) - (box_height - 1))
    columns = mirror_x.astype(np.intp)
    band_columns = np.exp(-((outside_x / max(band, 1.0)) ** 2))
    for start in range(0, height, STRIP_ROWS):
        stop = min(height, start + STRIP_ROWS)
        rows = mirror_y[start:stop].astype(np.intp)
        band_rows = np.exp(-((outside_y[start:stop] / max(band, 1.0)) ** 2))
        sharp = placed[rows[:, None], columns[None, :]]
        weight = (band_rows[:, None] * band_columns[None, :])[..., None]
        strip = fill[start:stop]
        strip += (sharp - strip) * weight
        noise = rng.standard_normal(strip.shape[:2], dtype=np.float32)
        strip += (noise * np.float32(grain) * (1.0 - weight[..., 0]))[..., None]
        stages.within(stop / height)
    fill[top : top + box_height, left : left + box_width] = placed
    return fill


class BuiltinReframe:
    """Outpainting without a model: mirror, inpaint and blend, then fit the exact size."""

    operation = "reframe"

    def __init__(self) -> None:
        self.engine = shared_super_resolution()

    def run(self, inputs: ReframeInput, control: JobControl) -> ImageOutput:
        width, height = inputs.width, inputs.height
        if width < 1 or height < 1:
            raise ValueError("width and height must be positive")
        source = inputs.source.convert("RGB")
        box = placement(source.width, source.height, width, height)
        left, top, box_width, box_height = box
        stages = Stages(control, {"placing": 3.0, "extending": 4.0, "composing": 2.0})
        stages.begin("placing")
        placed_image, notes = enlarge(
            source, box_width, box_height, self.engine, stages.within, MODEL_FROM
        )
        if (box_width, box_height) == (width, height):
            return ImageOutput(images=[placed_image], notes=["same aspect ratio; resized only"])
        placed = to_array(placed_image)
        offer_preview(control, placed_image.copy)

        stages.begin("extending")
        work_width, work_height = width, height
        if width * height > WORK_PIXELS:
            shrink = math.sqrt(WORK_PIXELS / (width * height))
            work_width, work_height = max(2, round(width * shrink)), max(2, round(height * shrink))
        scale_x, scale_y = work_width / width, work_height / height
        work_box = (
            round(left * scale_x),
            round(top * scale_y),
            max(2, round(box_width * scale_x)),
            max(2, round(box_height * scale_y)),
        )
        work_source = resized(placed, work_box[2], work_box[3])
        fill = _fill(work_source, work_width, work_height, work_box, inputs.seed)
        grain = _grain_level(work_source)
        offer_preview(control, lambda: to_image(fill))  # the new area, before the seams are blended

        stages.begin("composing")
        fill = resized(fill, width, height)
        rng = np.random.default_rng([inputs.seed, width, height, 1])
        canvas = _compose(placed, fill, box, grain, rng, stages)
        image = to_image(canvas)
        log_peak_memory(log, "reframe", width, height)
        notes = [
            f"builtin reframe: source fitted at {box_width}x{box_height}, "
            "new area extended by mirror, inpaint and blend",
            *notes,
        ]
        return ImageOutput(images=[image], notes=notes)
