"""Thumbnails: a small JPEG of an image, made the first time a grid shows it and stored, so a
gallery never sends the full-size original (up to 4K) to a grid cell."""

from __future__ import annotations

import io
from collections.abc import Iterable

from PIL import Image

from core.images import decode_first_frame
from core.services import Services
from core.tables import Thumbnail
from core.thumbnails import repository

# The longest side, in pixels: sharp in a grid cell on a high-density screen.
THUMBNAIL_SIZE = 384
IMAGE_CONTENT_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")


def stored_keys(services: Services, media_ids: Iterable[str]) -> dict[str, str]:
    """The thumbnails already made for these media (media id -> storage key)."""
    with services.db.read() as session:
        return repository.keys_of(session, media_ids)


def thumbnail_of(services: Services, account_id: str, media_id: str) -> Thumbnail | None:
    """The account's image's thumbnail, made now if it has none yet (None: no such image)."""
    with services.db.read() as session:
        existing = repository.get(session, media_id)
        media = repository.owned_media(session, media_id, account_id)
    if media is None or media.content_type not in IMAGE_CONTENT_TYPES:
        return None
    if existing is not None:
        return existing
    image = decode_first_frame(services.storage.get_bytes(media.storage_key))
    image.thumbnail((THUMBNAIL_SIZE, THUMBNAIL_SIZE), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=82, optimize=True)
    key = f"thumbnails/{media.id}.jpg"
    services.storage.put_bytes(key, buffer.getvalue(), "image/jpeg")
    with services.db.write() as session:
        return repository.add_unless_present(
            session,
            Thumbnail(media_id=media.id, storage_key=key, width=image.width, height=image.height),
        )
