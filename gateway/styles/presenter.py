"""A saved style as the API shows it (StyleDetail, the list's summaries), its linked assets and
search hits."""

from __future__ import annotations

from core.clock import isoformat_ms
from core.styles.payload import StyleDetail, colours_of, typography_of
from core.styles.search import RankedAsset
from core.styles.service import palette_of
from core.tables import Style, StyleAsset
from gateway.signing import UrlSigner
from gateway.styles.schemas import SearchHit, StyleAssetItem, StyleSummary


class StylePresenter:
    def __init__(self, signer: UrlSigner) -> None:
        self.signer = signer

    def _logo_url(self, style: Style) -> str | None:
        return self.signer.url(style.logo_key) if style.logo_key is not None else None

    def detail(self, style: Style) -> StyleDetail:
        return StyleDetail(
            id=style.id,
            name=style.name,
            url=style.url,
            description=style.description,
            tagline=style.tagline,
            colours=colours_of(style.colours),
            typography=typography_of(style.typography),
            tone=style.tone,
            aesthetic=style.aesthetic,
            logo_url=self._logo_url(style),
        )

    def summary(self, style: Style) -> StyleSummary:
        return StyleSummary(
            id=style.id,
            name=style.name,
            url=style.url,
            logoUrl=self._logo_url(style),
            palette=palette_of(style),
        )

    def asset(self, asset: StyleAsset) -> StyleAssetItem:
        return StyleAssetItem(
            id=asset.id,
            name=asset.name,
            url=self.signer.url(asset.storage_key),
            source=asset.source,  # type: ignore[arg-type]  # one of the three, by the table
            altText=asset.alt_text,
            createdAt=isoformat_ms(asset.created_at),
        )

    def hit(self, hit: RankedAsset) -> SearchHit:
        return SearchHit(
            id=hit.asset_id,
            name=hit.name,
            url=self.signer.url(hit.storage_key),
            similarity=round(hit.similarity, 6),
        )
