"""The easing curves that time the builtin video pipelines' camera moves and in-betweens."""

from __future__ import annotations


def ease_in_out(progress: float) -> float:
    """Half linear, half smoothstep: the camera starts moving at once yet settles softly."""
    t = min(max(progress, 0.0), 1.0)
    return 0.5 * t + 0.5 * t * t * (3.0 - 2.0 * t)


def smoothstep(t: float) -> float:
    t = min(max(t, 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)
