"""A saved style as the API shows it (StyleDetail, the list's summaries), its linked assets and
search hits."""

from __future__ import annotations

from typing import Any

from core.clock import isoformat_ms
from core.styles.search import SearchHit
from core.styles.service import palette_of
from core.tables import Style, StyleAsset
from gateway.signing import UrlSigner


class StylePresenter:
    def __init__(self, signer: UrlSigner) -> None:
        self.signer = signer

    def _logo_url(self, style: Style) -> str | None:
        return self.signer.url(style.logo_key) if style.logo_key is not None else None

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
            "url": self.signer.url(asset.storage_key),
            "source": asset.source,
            "altText": asset.alt_text,
            "createdAt": isoformat_ms(asset.created_at),
        }

    def hit(self, hit: SearchHit) -> dict[str, Any]:
        return {
            "id": hit.asset_id,
            "name": hit.name,
            "url": self.signer.url(hit.storage_key),
            "similarity": round(hit.similarity, 6),
        }
