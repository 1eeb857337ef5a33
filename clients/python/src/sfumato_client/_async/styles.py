"""Styles: extract from a website, read, list, search a style's assets, link assets."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Sequence

from sfumato_client._async.creates import AsyncCreates
from sfumato_client._async.jobs import AsyncJob
from sfumato_client._files import FileInput
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


class AsyncStyles(AsyncCreates):
    async def extract(
        self, url: str, *, as_new: bool | None = None, webhook: Webhook | None = None
    ) -> AsyncJob:
        """Starts a style extraction from a website; the completed job's `result.style.id` is
        the saved style: the account's style of the same site, updated, or a new one (the
        first of the site, or with `as_new`)."""
        return await self._create(
            "/styles/extract", ExtractRequest(url=url, as_new=as_new, webhook=webhook)
        )

    async def get_extraction(self, job_id: str, *, wait: bool = False) -> AsyncJob:
        return await self._read(f"/styles/extractions/{job_id}", wait)

    async def get(self, style_id: str) -> Style:
        answer = await self._transport.request("GET", f"/styles/{style_id}")
        return Style.model_validate(answer["data"])

    async def list(self, *, limit: int | None = None) -> AsyncIterator[StyleSummary]:
        """Saved styles, newest first, page after page; `limit` caps how many."""
        async for item in self._transport.pages("/styles", {}, limit):
            yield StyleSummary.model_validate(item)

    async def search(
        self, style_id: str, query: str, *, limit: int | None = None
    ) -> builtins.list[SearchHit]:
        """Semantic search over the style's linked assets, best first."""
        body = SearchRequest(query=query, limit=limit).wire()
        answer = await self._transport.request("POST", f"/styles/{style_id}/search", json=body)
        return [SearchHit.model_validate(hit) for hit in answer["data"]]

    async def assets(self, style_id: str, *, limit: int | None = None) -> AsyncIterator[StyleAsset]:
        """The style's linked assets (extension), newest first."""
        async for item in self._transport.pages(f"/styles/{style_id}/assets", {}, limit):
            yield StyleAsset.model_validate(item)

    async def link_assets(
        self, style_id: str, images: Sequence[FileInput]
    ) -> builtins.list[StyleAsset]:
        """Links images (uploads, generations, URLs; local files uploaded first) into the
        style's folder (extension)."""
        body = LinkAssetsRequest(images=await self._uploads.resolve_all(images) or [])
        answer = await self._transport.request(
            "POST", f"/styles/{style_id}/assets", json=body.wire()
        )
        return [StyleAsset.model_validate(asset) for asset in answer["data"]]
