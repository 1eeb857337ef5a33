"""The one function that prices an operation, used by the API, the ledger and the docs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.config import Prices


def price_of(prices: Prices, operation: str, inputs: Mapping[str, Any]) -> int:
    """Credits an operation with these (validated) inputs costs, per the configured table."""
    if operation == "generate":
        table = prices.generate
        per_image = table.quality[inputs["quality"]] * table.resolution[inputs["resolution"]]
        return per_image * int(inputs["variations"])
    if operation in ("edit", "reframe", "upscale"):
        resolution_table: Mapping[str, int] = getattr(prices, operation).resolution
        return resolution_table[inputs["resolution"]]
    if operation in ("animate", "transition"):
        per_second = getattr(prices, operation).per_second[inputs["resolution"]]
        return math.ceil(per_second * float(inputs["duration"]))
    if operation == "extract_style":
        return prices.extract_style.flat
    raise ValueError(f"no price for operation {operation!r}")
