# Generated from sfumato_client/_async/styles.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""Styles: extract from a website, read, list, search a style's assets, link assets."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence

from sfumato_client._files import FileInput
from sfumato_client._sync.creates import Creates
from sfumato_client._sync.jobs import Job
from sfumato_client.models import (
    ExtractRequest,
    LinkAssetsRequest,
    SearchHit,
    SearchRequest,
    Style,
    StyleAsset,
    StyleSummary,
    Webhook,
)


class Styles(Creates):
    def extract(
        self, url: str, *, as_new: bool | None = None, webhook: Webhook | None = None
    ) -> Job:
        """Starts a style extraction from a website; the completed job's `result.style.id` is
        the saved style: the account's style of the same site, updated, or a new one (the
        first of the site, or with `as_new`)."""
        return self._create(
            "/styles/extract", ExtractRequest(url=url, as_new=as_new, webhook=webhook)
        )

    def get_extraction(self, job_id: str, *, wait: bool = False) -> Job:
        return self._read(f"/styles/extractions/{job_id}", wait)

    def get(self, style_id: str) -> Style:
        answer = self._transport.request("GET", f"/styles/{style_id}")
        return Style.model_validate(answer["data"])

    def list(self, *, limit: int | None = None) -> Iterator[StyleSummary]:
        """Saved styles, newest first, page after page; `limit` caps how many."""
        for item in self._transport.pages("/styles", {}, limit):
            yield StyleSummary.model_validate(item)

    def search(
        self, style_id: str, query: str, *, limit: int | None = None
    ) -> builtins.list[SearchHit]:
        """Semantic search over the style's linked assets, best first."""
        body = SearchRequest(query=query, limit=limit).wire()
        answer = self._transport.request("POST", f"/styles/{style_id}/search", json=body)
        return [SearchHit.model_validate(hit) for hit in answer["data"]]

    def assets(self, style_id: str, *, limit: int | None = None) -> Iterator[StyleAsset]:
        """The style's linked assets (extension), newest first."""
        for item in self._transport.pages(f"/styles/{style_id}/assets", {}, limit):
            yield StyleAsset.model_validate(item)

    def link_assets(self, style_id: str, images: Sequence[FileInput]) -> builtins.list[StyleAsset]:
        """Links images (uploads, generations, URLs; local files uploaded first) into the
        style's folder (extension)."""
        body = LinkAssetsRequest(images=self._uploads.resolve_all(images) or [])
        answer = self._transport.request("POST", f"/styles/{style_id}/assets", json=body.wire())
        return [StyleAsset.model_validate(asset) for asset in answer["data"]]
