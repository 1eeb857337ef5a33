"""Easing curves: `smoothstep`, the one soft 0-to-1 ramp of every builtin painter (masks, mist,
clouds, fades), and the curves that time the video pipelines' camera moves and in-betweens."""

from __future__ import annotations

from typing import Any, overload

import numpy as np
from numpy.typing import NDArray


def ease_in_out(progress: float) -> float:
    """Half linear, half smoothstep: the camera starts moving at once yet settles softly."""
    t = min(max(progress, 0.0), 1.0)
    return 0.5 * t + 0.5 * t * t * (3.0 - 2.0 * t)


@overload
def smoothstep(edge0: float, edge1: float, x: float) -> float: ...
@overload
def smoothstep(
    edge0: float, edge1: float, x: NDArray[np.floating[Any]]
) -> NDArray[np.floating[Any]]: ...
def smoothstep(edge0: float, edge1: float, x: Any) -> Any:
    """0 below `edge0`, 1 above `edge1`, and Hermite's smooth ramp between, for a number or
    elementwise for an array (whose float type it keeps)."""
    t = np.clip((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    ramp = t * t * (3.0 - 2.0 * t)
    return float(ramp) if np.ndim(ramp) == 0 else ramp
