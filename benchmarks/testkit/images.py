"""Real images of known colours."""

from __future__ import annotations

import io

from PIL import Image


def image_bytes(
    colour: tuple[int, int, int], size: tuple[int, int] = (64, 48), format: str = "PNG"
) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format=format)
    return buffer.getvalue()
