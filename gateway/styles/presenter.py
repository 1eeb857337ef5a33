"""A saved style as the API shows it (StyleDetail, the list's summaries), its linked assets and
search hits."""

from __future__ import annotations

from typing import Any

from core.clock import isoformat_ms
from core.storage import Storage
from core.styles.service import SearchHit, palette_of
from core.tables import Style, StyleAsset


class StylePresenter:
    def __init__(self, storage: Storage, base_url: str, url_seconds: int) -> None:
        self.storage = storage
        self.base_url = base_url
        self.url_seconds = url_seconds

    def _url(self, key: str) -> str:
        return self.storage.url_for(key, base_url=self.base_url, expires_in=self.url_seconds)

    def _logo_url(self, style: Style) -> str | None:
        return self._url(style.logo_key) if style.logo_key is not None else None

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

    def asset(self, asset: StyleAsset) -> dict[str, Any]:
        return {
            "id": asset.id,
            "name": asset.name,
            "url": self._url(asset.storage_key),
            "source": asset.source,
            "altText": asset.alt_text,
            "createdAt": isoformat_ms(asset.created_at),
        }

    def hit(self, hit: SearchHit) -> dict[str, Any]:
        return {
            "id": hit.asset_id,
            "name": hit.name,
            "url": self._url(hit.storage_key),
            "similarity": round(hit.similarity, 6),
        }
