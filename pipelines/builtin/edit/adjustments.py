"""The edit's adjustments, one function per step operation, on float32 RGB arrays the size of the
source (the painting-style networks run on a smaller copy, `painting_styles.py`), the order they
apply in, and the recolouring towards a brand style's palette."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from pipelines.builtin import painting_styles
from pipelines.builtin.edit.instructions import Step
from pipelines.builtin.imaging import LUMA, Float, blurred, luma
from pipelines.media.colours import COLOURS, parse_hex_colour


@dataclass
class Context:
    references: tuple[Image.Image, ...]
    rng: np.random.Generator  # grain: seeded by the job, so an edit is repeatable


def _grey(picture: Float) -> Float:
    return luma(picture)[..., None]


def temperature(picture: Float, amount: float, _: Context) -> Float:
    # Along the blackbody direction: red and blue move apart, green follows red a little.
    gains = np.array([1.0 + 0.12 * amount, 1.0 + 0.03 * amount, 1.0 - 0.14 * amount], np.float32)
    return picture * gains


def brightness(picture: Float, amount: float, _: Context) -> Float:
    # A gamma curve: mid-tones move most, black and white stay put.
    gamma = float(np.exp(-0.35 * amount))
    return np.power(np.clip(picture, 0.0, 1.0), gamma)


def contrast(picture: Float, amount: float, _: Context) -> Float:
    pivot = float(luma(picture).mean())
    return pivot + (picture - pivot) * np.float32(1.0 + 0.3 * amount)


def saturation(picture: Float, amount: float, _: Context) -> Float:
    grey = _grey(picture)
    return grey + (picture - grey) * np.float32(max(0.0, 1.0 + 0.45 * amount))


def monochrome(picture: Float, amount: float, _: Context) -> Float:
    grey = np.repeat(_grey(picture), 3, axis=2)
    if amount >= 1.0:
        return grey  # exactly equal channels, as black and white should be
    return picture + (grey - picture) * np.float32(max(0.0, amount))


def sepia(picture: Float, amount: float, _: Context) -> Float:
    grey = _grey(picture)
    toned = np.clip(grey * np.array([1.07, 0.86, 0.62], np.float32) + 0.03, 0.0, 1.0)
    return picture + (toned - picture) * np.float32(min(1.0, 0.9 * abs(amount)))


def tint(picture: Float, amount: float, colour_name: str) -> Float:
    """Towards a named colour (away from it when negative), keeping each pixel's brightness."""
    colour = np.array(COLOURS[colour_name], np.float32)
    target = colour * (_grey(picture) / max(float(luma(colour)), 0.05))
    return picture + (target - picture) * np.float32(np.clip(0.3 * amount, -0.6, 0.6))


def neutralise(picture: Float, amount: float, _: Context) -> Float:
    """White balance by "shades of grey" (Finlayson): the illuminant is each channel's p-norm."""
    sample = picture[:: max(1, picture.shape[0] // 256), :: max(1, picture.shape[1] // 256)]
    illuminant = np.power(np.mean(np.power(sample.reshape(-1, 3), 6.0), axis=0), 1.0 / 6.0)
    gains = illuminant.mean() / np.maximum(illuminant, 1e-3)
    gains = 1.0 + (gains - 1.0) * min(1.0, abs(amount))
    return picture * gains.astype(np.float32)


def levels(picture: Float, amount: float, _: Context) -> Float:
    """Stretch the brightness so the darkest and brightest half-percent reach black and white."""
    sample = luma(picture[:: max(1, picture.shape[0] // 256), :: max(1, picture.shape[1] // 256)])
    low, high = np.percentile(sample, [0.5, 99.5])
    if high - low < 0.05:
        return picture
    stretched = (picture - low) / (high - low)
    return picture + (stretched - picture) * np.float32(min(1.0, amount))


def vintage(picture: Float, amount: float, context: Context) -> Float:
    strength = float(np.clip(amount, 0.0, 1.6))
    faded = saturation(picture, -0.7 * strength, context)
    # Lifted, warm blacks: old prints never reach pure black.
    lift = np.array([0.1, 0.07, 0.03], np.float32) * np.float32(strength)
    faded = faded * np.float32(1.0 - 0.12 * strength) + lift
    faded = tint(faded, 0.5 * strength, "amber")
    faded = vignette(faded, 0.6 * strength, context)
    return grain(faded, 0.7 * strength, context)


def invert(picture: Float, amount: float, _: Context) -> Float:
    return 1.0 - np.clip(picture, 0.0, 1.0)


def _radius(picture: Float, share: float) -> float:
    """A blur radius in pixels as a share of the image's diagonal, the same look at any size."""
    height, width = picture.shape[:2]
    return share * float(np.hypot(height, width))


def sharpen(picture: Float, amount: float, _: Context) -> Float:
    soft = blurred(picture, max(1.0, _radius(picture, 0.0012)))
    return picture + (picture - soft) * np.float32(0.9 * amount)


def glow(picture: Float, amount: float, _: Context) -> Float:
    highlights = np.clip(picture - 0.45, 0.0, 1.0) * np.float32(1.8)
    bloom = blurred(highlights, _radius(picture, 0.02)) * np.float32(0.6 * amount)
    return 1.0 - (1.0 - picture) * (1.0 - bloom)  # screen blend


def haze(picture: Float, amount: float, _: Context) -> Float:
    # Thicker towards the top, where the distance usually is.
    height = picture.shape[0]
    depth = np.linspace(1.0, 0.45, height, dtype=np.float32)[:, None, None]
    veil = np.float32(0.72) + np.float32(0.25) * blurred(picture, _radius(picture, 0.01))
    return picture + (veil - picture) * (depth * np.float32(0.45 * min(1.5, amount)))


def vignette(picture: Float, amount: float, _: Context) -> Float:
    height, width = picture.shape[:2]
    y = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    falloff = 1.0 - np.float32(0.4 * amount) * np.clip((x * x + y * y) * 0.6, 0.0, 1.0) ** 1.5
    return picture * falloff[..., None]


def grain(picture: Float, amount: float, context: Context) -> Float:
    """Monochrome film grain, strongest in the mid-tones, a little soft like silver grains."""
    height, width = picture.shape[:2]
    noise = context.rng.standard_normal((height, width), dtype=np.float32)
    noise = np.asarray(cv2.GaussianBlur(noise, (0, 0), 0.7), np.float32)
    grey = luma(picture)
    weight = np.float32(0.09 * abs(amount)) * (0.35 + 2.6 * grey * (1.0 - grey))
    return picture + (noise * weight)[..., None]


def denoise(picture: Float, amount: float, _: Context) -> Float:
    smooth = cv2.bilateralFilter(np.clip(picture, 0.0, 1.0), 7, 0.08, 5.0)
    return picture + (np.asarray(smooth, np.float32) - picture) * np.float32(min(1.0, amount))


def blur_background(picture: Float, amount: float, _: Context) -> Float:
    """Keep the likely subject and the foreground sharp; blur the rest, more with distance.

    With no segmentation or depth model both are guessed: the subject is where the detail is
    (local contrast) near the centre of the frame, and distance grows upwards from the row
    where the detail peaks, as it does in most landscapes (lower in the frame is nearer).
    """
    height, width = picture.shape[:2]
    grey = luma(picture)
    detail = np.abs(np.asarray(cv2.Laplacian(grey, cv2.CV_32F, ksize=3), np.float32))
    detail = blurred(detail, _radius(picture, 0.01))
    detail /= max(float(detail.max()), 1e-6)
    y = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    centre = np.exp(-(x * x) / 0.25 - ((y - 0.1) ** 2) / 0.35)
    subject = np.clip((detail * centre - 0.08) * 4.0, 0.0, 1.0)
    # The focus row: where detail peaks in the lower two thirds; below it is foreground.
    rows = detail.mean(axis=1)
    lower = height // 3
    focus = (lower + int(np.argmax(rows[lower:]))) / max(1, height - 1) * 2.0 - 1.0
    distance = np.clip((focus - y) / 0.5, 0.0, 1.0)
    sharp = np.maximum(subject, 1.0 - distance)
    # Feathered, so that the subject's edges do not halo.
    sharp = np.clip(blurred(sharp, _radius(picture, 0.01)), 0.0, 1.0)
    background = blurred(picture, _radius(picture, 0.008 * max(0.5, min(2.0, amount))))
    return background + (picture - background) * sharp[..., None]


def split_tone(picture: Float, amount: float, _: Context) -> Float:
    """The film look: shadows towards teal, highlights towards orange."""
    grey = _grey(picture)
    shadows = np.array([-0.05, 0.015, 0.05], np.float32) * (1.0 - grey)
    highlights = np.array([0.05, 0.012, -0.05], np.float32) * grey
    return picture + (shadows + highlights) * np.float32(amount)


def _style(picture: Float, amount: float, name: str) -> Float:
    style = next(s for s in painting_styles.LEARNED_STYLES if s.name == name)
    return painting_styles.shared_engine().learned(picture, style, min(1.0, 0.85 * amount))


def _reference(picture: Float, amount: float, context: Context) -> Float:
    board = painting_styles.reference_board(context.references)
    strength = float(np.clip(0.85 * amount, 0.0, 1.0))
    return painting_styles.shared_engine().from_reference(picture, board, strength)


Operation = Callable[[Float, float, Context], Float]
OPERATIONS: dict[str, Operation] = {
    "neutralise": neutralise,
    "levels": levels,
    "denoise": denoise,
    "reference": _reference,
    "temperature": temperature,
    "brightness": brightness,
    "contrast": contrast,
    "saturation": saturation,
    "haze": haze,
    "vintage": vintage,
    "sepia": sepia,
    "monochrome": monochrome,
    "invert": invert,
    "sharpen": sharpen,
    "glow": glow,
    "split_tone": split_tone,
    "blur_background": blur_background,
    "vignette": vignette,
    "grain": grain,
}
# Correct first, then restyle, then colour and tone, then local effects; grain goes on last.
ORDER = (
    "neutralise",
    "levels",
    "denoise",
    "style",
    "reference",
    "temperature",
    "tint",
    "brightness",
    "contrast",
    "saturation",
    "haze",
    "vintage",
    "sepia",
    "monochrome",
    "invert",
    "sharpen",
    "glow",
    "split_tone",
    "blur_background",
    "vignette",
    "grain",
)
# Relative cost, for progress.
WEIGHTS = {"style": 6.0, "reference": 6.0, "blur_background": 3.0, "denoise": 3.0, "grain": 2.0}


def apply_step(picture: Float, step: Step, context: Context) -> Float:
    if step.operation == "style":
        return _style(picture, step.strength, step.argument)
    if step.operation == "tint":
        return tint(picture, step.strength, step.argument)
    return OPERATIONS[step.operation](picture, step.strength, context)


# How strongly a brand style's palette (styleId) recolours an edit.
BRAND_GRADE = 0.35


def brand_grade(picture: Float, palette: tuple[str, ...], amount: float = BRAND_GRADE) -> Float:
    """A gradient map through the brand's colours, ordered dark to light, blended in at
    `amount`: the picture keeps its shapes and light, and takes the brand's colours."""
    colours = sorted(
        (c for c in map(parse_hex_colour, palette) if c), key=lambda c: float(np.dot(c, LUMA))
    )
    if not colours:
        return picture
    if len(colours) == 1:
        colours = [(0.0, 0.0, 0.0), colours[0], (1.0, 1.0, 1.0)]
    stops = np.array(colours, np.float32)
    positions = np.linspace(0.0, 1.0, len(stops))
    light = luma(picture)
    mapped = np.stack([np.interp(light, positions, stops[:, c]) for c in range(3)], axis=-1)
    return picture * (1.0 - amount) + mapped.astype(np.float32) * amount
