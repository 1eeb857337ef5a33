"""What image bytes really are: their type and size, and whether they are safe to decode.

Uploads, fetched references and brand images all come from strangers, so the declared type is
never trusted and the pixel count is checked from the header before anything is decoded. A small
file can still decode to hundreds of megabytes within the pixel limit (a 381 KB PNG of 7000x7000
RGBA): each check is priced from its header (decoded bytes per pixel times pixels) and waits
for room in the process's decode budget (SFUMATO_DECODE_MEMORY_MB), so concurrent checks never
hold more than the budget; JPEGs are checked at an eighth of their size (the whole stream is
still read), the other formats need a full decode of their first frame.
"""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from PIL import Image

# Pillow format -> (content type, file extension): the four the API accepts.
ACCEPTED_FORMATS = {
    "PNG": ("image/png", ".png"),
    "JPEG": ("image/jpeg", ".jpg"),
    "GIF": ("image/gif", ".gif"),
    "WEBP": ("image/webp", ".webp"),
}
# An animation may decode to this many times the single-image pixel limit over all its frames;
# beyond that a small file is a decompression bomb (thousands of full-canvas frames).
ANIMATION_PIXEL_FACTOR = 4


# Pillow holds 1 byte per pixel for these modes, 2 for 16-bit greyscale, 4 for every other.
_NARROW_MODES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16B": 2, "I;16L": 2, "I;16N": 2}
# A JPEG is decoded at 1/8 of its size to check it (libjpeg scales while decoding).
JPEG_CHECK_SCALE = 8


def decoded_bytes(mode: str, width: int, height: int) -> int:
    return _NARROW_MODES.get(mode, 4) * width * height


class DecodeBudget:
    """Bytes of decoded pixels the image checks of this process may hold at once. A check
    costing more than the whole budget runs alone."""

    def __init__(self, capacity: int) -> None:
        self._condition = threading.Condition()
        self.capacity = capacity
        self.in_use = 0
        self.peak = 0

    def set_capacity(self, capacity: int) -> None:
        with self._condition:
            self.capacity = capacity
            self._condition.notify_all()

    @contextmanager
    def reserve(self, cost: int) -> Iterator[None]:
        with self._condition:
            taken = min(cost, self.capacity)
            self._condition.wait_for(lambda: self.in_use + taken <= self.capacity)
            self.in_use += taken
            self.peak = max(self.peak, self.in_use)
        try:
            yield
        finally:
            with self._condition:
                self.in_use -= taken
                self._condition.notify_all()


# Process-wide, as the memory it guards is; sized from the settings when services are built.
DECODE_BUDGET = DecodeBudget(512 * 1024 * 1024)


class NotAnImage(Exception):
    """The bytes are not an accepted image, or decoding them would be unsafe. The message is a
    predicate for "the file": "is not a PNG, JPEG, GIF or WebP image"."""


class TooManyPixels(Exception):
    """A real image, but larger than the configured pixel limit (message as for NotAnImage)."""


@dataclass(frozen=True)
class ImageFacts:
    content_type: str
    extension: str
    width: int
    height: int
    frames: int


def inspect_image(data: bytes, max_pixels: int) -> ImageFacts:
    """Identify and vet `data`: its header and pixel limit, then a decode of frame one within
    the process's decode budget (at 1/8 scale for JPEG)."""
    if not data:
        raise NotAnImage("is empty")
    with warnings.catch_warnings():
        # Pillow only warns below twice its own limit; ours is lower and checked below anyway.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data), formats=list(ACCEPTED_FORMATS))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise TooManyPixels(f"has more than {max_pixels} pixels") from None
        except (OSError, ValueError, SyntaxError):
            raise NotAnImage("is not a PNG, JPEG, GIF or WebP image") from None
        with image:
            width, height = image.size
            if width < 1 or height < 1:
                raise NotAnImage("has no pixels")
            if width * height > max_pixels:
                raise TooManyPixels(f"has {width * height} pixels; the limit is {max_pixels}")
            try:
                frames = int(getattr(image, "n_frames", 1))
                if frames * width * height > ANIMATION_PIXEL_FACTOR * max_pixels:
                    raise NotAnImage(
                        f"is an animation of {frames} frames of {width}x{height} pixels, "
                        "more than this service decodes"
                    )
                image.seek(0)
                if image.format == "JPEG":
                    scaled = (max(1, width // JPEG_CHECK_SCALE), max(1, height // JPEG_CHECK_SCALE))
                    image.draft(image.mode, scaled)
                cost = decoded_bytes(image.mode, *image.size)
                with DECODE_BUDGET.reserve(cost):
                    image.load()
            except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
                raise NotAnImage("is corrupt or truncated") from None
            content_type, extension = ACCEPTED_FORMATS[str(image.format)]
    return ImageFacts(content_type, extension, width, height, frames)


def decode_first_frame(data: bytes) -> Image.Image:
    """The first frame of an image already vetted by `inspect_image`, as RGB (within the decode
    budget while it is decoded and converted)."""
    with Image.open(io.BytesIO(data), formats=list(ACCEPTED_FORMATS)) as image:
        image.seek(0)
        cost = decoded_bytes(image.mode, *image.size) + decoded_bytes("RGB", *image.size)
        with DECODE_BUDGET.reserve(cost):
            return image.convert("RGB")
