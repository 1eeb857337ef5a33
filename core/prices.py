"""The one function that prices a job, used by job creation, the ledger and the docs."""

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
        table = prices.generate
        per_image = table.quality[inputs.quality] * table.resolution[inputs.resolution]
        return per_image * inputs.variations
    if isinstance(inputs, EditJobInputs | ReframeJobInputs | UpscaleJobInputs):
        # The price tables are named after the operations they price.
        by_resolution: ResolutionPrices = getattr(prices, inputs.operation)
        return by_resolution.resolution[inputs.resolution]
    if isinstance(inputs, AnimateJobInputs | TransitionJobInputs):
        by_second: VideoPrices = getattr(prices, inputs.operation)
        return math.ceil(by_second.per_second[inputs.resolution] * inputs.duration)
    if isinstance(inputs, ExtractStyleJobInputs):
        return prices.extract_style.flat
    raise ValueError(f"no price for {type(inputs).__name__}")
