"""What a model family runs at: steps and guidance by quality, and the size nearest its training
area; and the resize back to the contract's exact size."""

from __future__ import annotations

import math
from typing import Any

from PIL import Image

from models.registry import ModelSpec

# Steps and guidance per model family and quality; the registry's `steps` / `guidance` options
# (a number, or a table by quality) replace them for one entry.
PRESETS: dict[str, dict[str, tuple[int, float]]] = {
    "sd15": {"low": (20, 7.0), "medium": (30, 7.5), "high": (50, 7.5)},
    "sdxl": {"low": (20, 5.0), "medium": (30, 6.0), "high": (40, 7.0)},
    "sd3": {"low": (20, 4.5), "medium": (28, 5.0), "high": (40, 5.5)},
    "flux": {"low": (20, 3.5), "medium": (28, 3.5), "high": (40, 3.5)},
    "other": {"low": (20, 5.0), "medium": (30, 6.0), "high": (40, 7.0)},
}
# The steps and guidance a create may ask of a family's model, unless its registry entry says
# (`steps_range`, `guidance_range`; a distilled model such as SD-Turbo: 1-4 and 0).
RANGES: dict[str, tuple[tuple[int, int], tuple[float, float]]] = {
    "sd15": ((10, 100), (1.0, 20.0)),
    "sdxl": ((10, 60), (1.0, 15.0)),
    "sd3": ((10, 60), (1.0, 15.0)),
    "flux": ((4, 50), (1.0, 10.0)),
    "other": ((1, 100), (0.0, 20.0)),
}
# The side of the square whose area each family was trained at.
NATIVE_SIDE = {"sd15": 512, "sdxl": 1024, "sd3": 1024, "flux": 1024, "other": 512}


def quality_settings(
    spec: ModelSpec,
    quality: str = "medium",
    steps_asked: int | None = None,
    guidance_asked: float | None = None,
) -> tuple[int, float]:
    """Steps and guidance for this entry and quality; a create's own steps or guidance (checked
    against `steering_ranges` when it was made) replace them."""
    steps, guidance = PRESETS[spec.family].get(quality, PRESETS[spec.family]["medium"])

    def pick(name: str, default: float) -> float:
        value = spec.option(name)
        if isinstance(value, dict):
            return float(value.get(quality, default))
        return default if value is None else float(value)

    return (
        int(pick("steps", steps)) if steps_asked is None else steps_asked,
        pick("guidance", guidance) if guidance_asked is None else guidance_asked,
    )


def steering_ranges(spec: ModelSpec) -> tuple[tuple[int, int], tuple[float, float]]:
    """The steps and guidance a create may ask of this entry: its own ranges, else its family's,
    widened to hold what it runs by quality (a value the entry runs is always allowed)."""
    family_steps, family_guidance = RANGES[spec.family]
    steps = spec.steps_range or family_steps
    guidance = spec.guidance_range or family_guidance
    ran = [quality_settings(spec, quality) for quality in ("low", "medium", "high")]
    return (
        (min(steps[0], *(s for s, _ in ran)), max(steps[1], *(s for s, _ in ran))),
        (min(guidance[0], *(g for _, g in ran)), max(guidance[1], *(g for _, g in ran))),
    )


def native_size(spec: ModelSpec, width: int, height: int, multiple: int) -> tuple[int, int]:
    """The size nearest the model's training area with the requested aspect ratio, in multiples
    of the VAE (and patch) factor; the result is resized exactly to the contract's size after."""
    side = int(spec.option("resolution", NATIVE_SIDE[spec.family]))
    aspect = width / height
    native_width = math.sqrt(side * side * aspect)
    native_height = native_width / aspect
    return (
        max(multiple, round(native_width / multiple) * multiple),
        max(multiple, round(native_height / multiple) * multiple),
    )


def size_multiple(pipe: Any) -> int:
    """What a generated size must be a multiple of: the VAE factor times a transformer's patch
    (and never less than 8, which the Stable Diffusion pipelines check whatever their VAE)."""
    factor = int(getattr(pipe, "vae_scale_factor", 8))
    model = getattr(pipe, "transformer", None)
    patch = getattr(getattr(model, "config", None), "patch_size", None) or 1
    return max(8, factor * int(patch))


def exact_size(image: Image.Image, width: int, height: int) -> Image.Image:
    """Resize to the contract's exact size (the model worked at its native size)."""
    if image.size == (width, height):
        return image
    return image.convert("RGB").resize((width, height), Image.Resampling.LANCZOS)
