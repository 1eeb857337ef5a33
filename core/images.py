"""What image bytes really are: their type and size, and whether they are safe to decode.

Uploads and fetched references both come from strangers, so the declared type is never trusted
and the pixel count is checked from the header before anything is decoded.
"""

from __future__ import annotations

import io
import warnings
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
    """Identify and vet `data`: its header, its pixel budget, then a full decode of frame one."""
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
                image.load()
            except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
                raise NotAnImage("is corrupt or truncated") from None
            content_type, extension = ACCEPTED_FORMATS[str(image.format)]
    return ImageFacts(content_type, extension, width, height, frames)


def decode_first_frame(data: bytes) -> Image.Image:
    """The first frame of an image already vetted by `inspect_image`, as RGB."""
    with Image.open(io.BytesIO(data), formats=list(ACCEPTED_FORMATS)) as image:
        image.seek(0)
        return image.convert("RGB")
