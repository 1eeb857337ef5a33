"""The one function that prices an operation, used by the API, the ledger and the docs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

QUALITY_CREDITS = {"low": 1, "medium": 2, "high": 4}
RESOLUTION_FACTOR = {"1K": 1, "2K": 2, "4K": 4}


def price_of(operation: str, inputs: Mapping[str, Any]) -> int:
    """Credits an operation with these (validated) inputs costs."""
    if operation == "generate":
        per_image = QUALITY_CREDITS[inputs["quality"]] * RESOLUTION_FACTOR[inputs["resolution"]]
        return per_image * int(inputs["variations"])
    raise ValueError(f"no price for operation {operation!r}")
