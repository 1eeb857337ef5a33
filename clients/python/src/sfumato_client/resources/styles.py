"""Styles: extract from a website, read, list, search a style's assets, link assets."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterator, Sequence

from sfumato_client._files import FileInput
from sfumato_client.models import (
    ExtractRequest,
    LinkAssetsRequest,
    SearchHit,
    SearchRequest,
    Style,
    StyleAsset,
    StyleSummary,
)
from sfumato_client.resources._create import AsyncCreates, SyncCreates
from sfumato_client.resources._pages import async_pages, pages
from sfumato_client.resources.jobs import AsyncJob, Job


class Styles(SyncCreates):
    def extract(self, url: str) -> Job:
        """Starts a style extraction from a website; the completed job's `result.style.id` is
        the new style."""
        return self._create("/styles/extract", ExtractRequest(url=url))

    def get_extraction(self, job_id: str, *, wait: bool = False) -> Job:
        return self._read(f"/styles/extractions/{job_id}", wait)

    def get(self, style_id: str) -> Style:
        return Style.model_validate(self._transport.request("GET", f"/styles/{style_id}")["data"])

    def list(self, *, limit: int | None = None) -> Iterator[StyleSummary]:
        """Saved styles, newest first, page after page; `limit` caps how many."""
        for item in pages(self._transport, "/styles", {}, limit):
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
        for item in pages(self._transport, f"/styles/{style_id}/assets", {}, limit):
            yield StyleAsset.model_validate(item)

    def link_assets(self, style_id: str, images: Sequence[FileInput]) -> builtins.list[StyleAsset]:
        """Links images (uploads, generations, URLs; local files uploaded first) into the
        style's folder (extension)."""
        body = LinkAssetsRequest(images=self._uploads.resolve_all(images) or [])
        answer = self._transport.request("POST", f"/styles/{style_id}/assets", json=body.wire())
        return [StyleAsset.model_validate(asset) for asset in answer["data"]]


class AsyncStyles(AsyncCreates):
    async def extract(self, url: str) -> AsyncJob:
        return await self._create("/styles/extract", ExtractRequest(url=url))

    async def get_extraction(self, job_id: str, *, wait: bool = False) -> AsyncJob:
        return await self._read(f"/styles/extractions/{job_id}", wait)

    async def get(self, style_id: str) -> Style:
        answer = await self._transport.request("GET", f"/styles/{style_id}")
        return Style.model_validate(answer["data"])

    async def list(self, *, limit: int | None = None) -> AsyncIterator[StyleSummary]:
        async for item in async_pages(self._transport, "/styles", {}, limit):
            yield StyleSummary.model_validate(item)

    async def search(
        self, style_id: str, query: str, *, limit: int | None = None
    ) -> builtins.list[SearchHit]:
        body = SearchRequest(query=query, limit=limit).wire()
        answer = await self._transport.request("POST", f"/styles/{style_id}/search", json=body)
        return [SearchHit.model_validate(hit) for hit in answer["data"]]

    async def assets(self, style_id: str, *, limit: int | None = None) -> AsyncIterator[StyleAsset]:
        async for item in async_pages(self._transport, f"/styles/{style_id}/assets", {}, limit):
            yield StyleAsset.model_validate(item)

    async def link_assets(
        self, style_id: str, images: Sequence[FileInput]
    ) -> builtins.list[StyleAsset]:
        body = LinkAssetsRequest(images=await self._uploads.resolve_all(images) or [])
        answer = await self._transport.request(
            "POST", f"/styles/{style_id}/assets", json=body.wire()
        )
        return [StyleAsset.model_validate(asset) for asset in answer["data"]]
