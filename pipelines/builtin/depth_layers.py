"""Splitting a still image into depth layers for 2.5D camera moves, with no depth model.

Nearness (0 far, 1 near) is guessed from cues that hold for most photographs and paintings:
lower in the frame is nearer; detail and saturation fade with distance (atmospheric
perspective); the sky, smooth and bright and connected to the top edge, is farthest. An
edge-aware (guided) filter makes the guess follow the image's own edges, so layers are cut along
object outlines. Each layer but the nearest has the parts hidden behind nearer layers filled by
push-pull inpainting, so moving a nearer layer uncovers plausible colour, never a hole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from pipelines.builtin.easing import smoothstep

# OpenCV's stubs type every result as a generic array, so these aliases document intent only.
Float = NDArray[Any]  # float32 images
Mask = NDArray[Any]  # float32 planes in [0, 1]

ANALYSIS_LONG_SIDE = 320  # depth cues are coarse; this keeps the analysis to milliseconds
LAYER_NEARNESS = (0.12, 0.5, 1.0)  # how fast each layer moves with the camera, far to near
# Share of the image farther than each layer cut (layers of ~45%, ~33%, ~22%); each cut moves
# within `CUT_LEEWAY` of its share to where the fewest pixels lie near it, so it falls between
# surfaces rather than across one.
LAYER_CUTS = (0.45, 0.78)
CUT_LEEWAY = 0.12
CUT_SOFTNESS = 0.04  # half-width of the soft edge between layers, in nearness units
# Behind a nearer layer, colour is inpainted where that layer is nearly opaque, plus this margin
# (of the long side) to drop the halo of its edge; where it is translucent (a soft transition
# across one surface) the original colour stays, so the layers still add up to the image.
HIDDEN_COVERAGE = 0.9
HIDDEN_DILATION = 0.002


@dataclass
class Layer:
    """Premultiplied-free RGB plus coverage at source size; `nearness` sets its parallax."""

    rgba: NDArray[np.uint8]
    nearness: float


@dataclass
class SceneLayers:
    layers: list[Layer]  # far to near; the first covers the whole frame
    sky: Mask  # where the sky is, at source size (clouds drift inside it)
    water: Mask  # where water probably is (it shimmers)
    depth: Mask  # the nearness estimate, at source size


def _normalised(values: Float, low: float = 2.0, high: float = 98.0) -> Mask:
    lo, hi = np.percentile(values, [low, high])
    return np.clip((values - lo) / max(float(hi - lo), 1e-6), 0.0, 1.0).astype(np.float32)


def guided_filter(guide: Float, values: Float, radius: int, eps: float) -> Mask:
    """He et al.'s guided filter (grey guide): smooths `values` but keeps the guide's edges."""
    size = (2 * radius + 1, 2 * radius + 1)

    def mean(x: Float) -> Float:
        return cv2.boxFilter(x.astype(np.float32), -1, size, borderType=cv2.BORDER_REFLECT)

    mean_guide, mean_values = mean(guide), mean(values)
    covariance = mean(guide * values) - mean_guide * mean_values
    variance = mean(guide * guide) - mean_guide * mean_guide
    a = covariance / (variance + eps)
    b = mean_values - a * mean_guide
    return (mean(a) * guide + mean(b)).astype(np.float32)


def push_pull_fill(rgb: Float, known: Mask) -> Mask:
    """Fill where `known` is 0 from the colours around, coarse to fine (a pyramid push-pull).

    Known pixels keep their colour; holes get a smooth blend of their surroundings at the scale
    of the hole, which is what a short camera move uncovers.
    """
    weighted: list[Float] = [rgb.astype(np.float32) * known[..., None]]
    weights: list[Mask] = [known.astype(np.float32)]
    while min(weights[-1].shape) > 2:
        height, width = weights[-1].shape
        size = (max(1, width // 2), max(1, height // 2))
        weighted.append(cv2.resize(weighted[-1], size, interpolation=cv2.INTER_AREA))
        weights.append(cv2.resize(weights[-1], size, interpolation=cv2.INTER_AREA))
    top_weight = weights[-1][..., None]
    fill = weighted[-1] / np.maximum(top_weight, 1e-6)
    if top_weight.max() <= 0:
        fill = np.zeros_like(weighted[-1])
    for level_weighted, level_weight in zip(reversed(weighted), reversed(weights), strict=True):
        height, width = level_weight.shape
        upsampled = cv2.resize(fill, (width, height), interpolation=cv2.INTER_LINEAR)
        own = level_weighted / np.maximum(level_weight, 1e-6)[..., None]
        confidence = np.clip(level_weight * 2.0, 0.0, 1.0)[..., None]
        fill = own * confidence + upsampled * (1.0 - confidence)
    return fill.astype(np.float32)


def _sky_mask(lightness: Mask, detail: Mask, rows: Mask) -> Mask:
    """Smooth pixels in an unbroken run down from the top edge, snapped to the image's edges.

    Clouds may be as detailed as a skyline, but they are lighter than the sky around them and
    high in the frame.
    """
    smooth = 1.0 - smoothstep(0.35, 0.65, detail)
    top_band = lightness[: max(1, lightness.shape[0] // 10)]
    cloud = smoothstep(0.0, 0.08, lightness - float(np.percentile(top_band, 50)))
    cloud *= (1.0 - smoothstep(0.8, 0.95, detail)) * (1.0 - smoothstep(0.3, 0.45, rows))
    likely = np.maximum(smooth, cloud) * (1.0 - smoothstep(0.6, 0.85, rows))
    connected = np.logical_and.accumulate(likely > 0.5, axis=0).astype(np.float32)
    if connected[0].mean() < 0.3:  # no open sky along the top edge: a close-up or an interior
        return np.zeros_like(lightness)
    radius = max(2, round(max(lightness.shape) * 0.02))
    return smoothstep(0.3, 0.7, guided_filter(lightness, connected, radius, 1e-3))


def estimate_nearness(rgb: NDArray[np.uint8]) -> tuple[Mask, Mask, Mask]:
    """Nearness in [0, 1], the sky and the likely water, all at `rgb`'s size."""
    height, width = rgb.shape[:2]
    scale = ANALYSIS_LONG_SIDE / max(height, width)
    small_size = (max(8, round(width * scale)), max(8, round(height * scale)))
    small = cv2.resize(rgb, small_size, interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    lab: Float = cv2.cvtColor(small, cv2.COLOR_RGB2LAB)
    lightness: Mask = lab[..., 0] * np.float32(0.01)
    chroma = np.hypot(lab[..., 1], lab[..., 2]) / 60.0
    grad_x = cv2.Sobel(lightness, cv2.CV_32F, 1, 0, ksize=3)
    grad_y = cv2.Sobel(lightness, cv2.CV_32F, 0, 1, ksize=3)
    sigma = max(small.shape[:2]) * 0.015
    detail = _normalised(cv2.GaussianBlur(np.hypot(grad_x, grad_y), (0, 0), sigma), 5, 95)
    rows = np.repeat(
        np.linspace(0.0, 1.0, small.shape[0], dtype=np.float32)[:, None], small.shape[1], axis=1
    )
    sky = _sky_mask(lightness, detail, rows)
    columns = np.linspace(-1.0, 1.0, small.shape[1], dtype=np.float32)[None, :]
    centre = np.exp(-(columns**2) / 0.5 - (rows - 0.62) ** 2 / 0.15)
    nearness = (
        0.55 * rows**1.3
        + 0.12 * detail
        + 0.12 * _normalised(chroma)
        + 0.1 * centre
        - 0.7 * cv2.GaussianBlur(sky, (0, 0), sigma)
    )
    radius = max(2, round(max(small.shape[:2]) * 0.04))
    nearness = guided_filter(lightness, _normalised(nearness, 1, 99), radius, 2e-3)
    nearness = _normalised(nearness, 1, 99)
    water = _water_mask(lightness, detail, rows, sky, sigma)
    size = (width, height)
    return tuple(  # type: ignore[return-value]
        cv2.resize(plane, size, interpolation=cv2.INTER_LINEAR) for plane in (nearness, sky, water)
    )


def _water_mask(lightness: Mask, detail: Mask, rows: Mask, sky: Mask, sigma: float) -> Mask:
    """Below the horizon: smooth, or varying more down than across (ripples), or mirroring the sky.

    Only used when the prompt names water, so it needs to find the water in such an image rather
    than to tell water from everything else.
    """
    sky_rows = np.flatnonzero(sky.mean(axis=1) > 0.3)
    horizon = (sky_rows.max() + 1) / sky.shape[0] if sky_rows.size else 0.45
    below = smoothstep(horizon, horizon + 0.04, rows)
    grad_x = cv2.Sobel(lightness, cv2.CV_32F, 1, 0, ksize=3)
    grad_y = cv2.Sobel(lightness, cv2.CV_32F, 0, 1, ksize=3)
    across = cv2.GaussianBlur(grad_x * grad_x, (0, 0), sigma)
    down = cv2.GaussianBlur(grad_y * grad_y, (0, 0), sigma)
    rippled = smoothstep(1.5, 4.0, (down + 1e-5) / (across + 1e-5))
    if sky.any():
        sky_lightness = float(lightness[sky > 0.5].mean())
        mirrored = 1.0 - smoothstep(0.08, 0.25, np.abs(lightness - sky_lightness * 0.85))
    else:
        mirrored = np.zeros_like(lightness)
    smooth = 1.0 - smoothstep(0.15, 0.4, detail)
    watery = np.maximum(np.maximum(rippled, mirrored), smooth * 0.8)
    water = cv2.GaussianBlur(below * watery, (0, 0), sigma * 2)
    return smoothstep(0.25, 0.55, water)


def _valley_cut(nearness: Mask, share: float) -> float:
    """The nearness, between the `share` -/+ `CUT_LEEWAY` quantiles, with the fewest pixels within
    `CUT_SOFTNESS` of it."""
    sample = np.sort(nearness[::4, ::4], axis=None)
    candidates = np.quantile(sample, np.linspace(share - CUT_LEEWAY, share + CUT_LEEWAY, 25))
    crowding = np.searchsorted(sample, candidates + CUT_SOFTNESS) - np.searchsorted(
        sample, candidates - CUT_SOFTNESS
    )
    # Ties go to the candidate nearest the intended share.
    order = np.abs(np.arange(candidates.size) - candidates.size // 2)
    return float(candidates[np.lexsort((order, crowding))[0]])


def split_layers(rgb: NDArray[np.uint8]) -> SceneLayers:
    """Cut `rgb` into far, middle and near layers at the nearness quantiles `LAYER_CUTS`."""
    nearness, sky, water = estimate_nearness(rgb)
    cuts = [_valley_cut(nearness, share) for share in LAYER_CUTS]
    coverages = [smoothstep(cut - CUT_SOFTNESS, cut + CUT_SOFTNESS, nearness) for cut in cuts]
    coverages = [np.ones_like(nearness), *coverages]
    long_side = max(rgb.shape[:2])
    dilation = max(1, round(long_side * HIDDEN_DILATION))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * dilation + 1, 2 * dilation + 1))
    layers = []
    for index, (coverage, layer_nearness) in enumerate(zip(coverages, LAYER_NEARNESS, strict=True)):
        colour: Float = rgb
        if index + 1 < len(coverages):
            nearly_opaque = coverages[index + 1] > HIDDEN_COVERAGE
            hidden = cv2.dilate(nearly_opaque.astype(np.uint8), kernel)
            known = 1.0 - hidden.astype(np.float32)
            colour = push_pull_fill(rgb, known)
        alpha = np.clip(coverage * 255.0 + 0.5, 0, 255)
        rgba = np.dstack([np.clip(colour + 0.5, 0, 255), alpha]).astype(np.uint8)
        layers.append(Layer(rgba=rgba, nearness=layer_nearness))
    return SceneLayers(layers=layers, sky=sky, water=water, depth=nearness)
