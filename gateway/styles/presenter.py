"""A saved style as the API shows it (StyleDetail and the list's summaries)."""

from __future__ import annotations

from typing import Any

from core.models import Style
from core.storage import Storage
from core.styles.service import palette_of


class StylePresenter:
    def __init__(self, storage: Storage, base_url: str, url_seconds: int) -> None:
        self.storage = storage
        self.base_url = base_url
        self.url_seconds = url_seconds

    def _logo_url(self, style: Style) -> str | None:
        if style.logo_key is None:
            return None
        return self.storage.url_for(
            style.logo_key, base_url=self.base_url, expires_in=self.url_seconds
        )

    def detail(self, style: Style) -> dict[str, Any]:
        return {
            "id": style.id,
            "name": style.name,
            "url": style.url,
            "description": style.description,
            "tagline": style.tagline,
            "colours": style.colours,
            "typography": style.typography,
            "tone": style.tone,
            "aesthetic": style.aesthetic,
            "logoUrl": self._logo_url(style),
        }

    def summary(self, style: Style) -> dict[str, Any]:
        return {
            "id": style.id,
            "name": style.name,
            "url": style.url,
            "logoUrl": self._logo_url(style),
            "palette": palette_of(style),
        }
