"""The one place that prices a job, used by job creation, the ledger, the dashboard's forms
(their price before submitting) and the docs: `price_of` prices a job's typed inputs, from the
per-operation functions below, which the forms call with their choices."""

from __future__ import annotations

import math

from core.jobs.contract import (
    AnimateJobInputs,
    EditJobInputs,
    ExtractStyleJobInputs,
    GenerateJobInputs,
    JobInputs,
    ReframeJobInputs,
    TransitionJobInputs,
    UpscaleJobInputs,
)
from core.service_config import Prices, ResolutionPrices, VideoPrices


def price_of(prices: Prices, inputs: JobInputs) -> int:
    """Credits a job with these inputs costs, per the configured table."""
    if isinstance(inputs, GenerateJobInputs):
        return generate_price(prices, inputs.quality, inputs.resolution, inputs.variations)
    if isinstance(inputs, EditJobInputs | ReframeJobInputs | UpscaleJobInputs):
        return image_price(prices, inputs.operation, inputs.resolution)
    if isinstance(inputs, AnimateJobInputs | TransitionJobInputs):
        return video_price(prices, inputs.operation, inputs.resolution, inputs.duration)
    if isinstance(inputs, ExtractStyleJobInputs):
        return extract_style_price(prices)
    raise ValueError(f"no price for {type(inputs).__name__}")


def generate_price(prices: Prices, quality: str, resolution: str, variations: int) -> int:
    table = prices.generate
    return table.quality[quality] * table.resolution[resolution] * variations


def image_price(prices: Prices, operation: str, resolution: str) -> int:
    """Edit, reframe or upscale: by the resolution of the image made."""
    # The price tables are named after the operations they price.
    by_resolution: ResolutionPrices = getattr(prices, operation)
    return by_resolution.resolution[resolution]


def video_price(prices: Prices, operation: str, resolution: str, duration: float) -> int:
    """Animate or transition: per second, rounded up to a whole credit for the clip."""
    by_second: VideoPrices = getattr(prices, operation)
    return math.ceil(by_second.per_second[resolution] * duration)


def extract_style_price(prices: Prices) -> int:
    return prices.extract_style.flat
