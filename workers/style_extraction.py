"""A style extraction as the worker runs it: the site read through the project's SSRF-safe
fetcher, its brand images re-hosted as the style's first assets, and the style row made to be
saved with the job's completion (so a cancelled extraction saves nothing)."""

from __future__ import annotations

import hashlib
import mimetypes
import os
from urllib.parse import urlsplit

from core.fetch import FetchPolicy, fetch
from core.ids import new_id
from core.jobs.contract import ExtractStyleInputs, SavedStyleRef, StyleResult
from core.services import Services
from core.styles import service as styles_service
from core.tables import Job, Media, Style
from pipelines.base import JobControl
from pipelines.styles import (
    BrandImage,
    describe_image,
    embed_texts,
    extract_style,
    image_shape,
    rank_by_similarity,
)
from workers.storing import Outcome, OutputStore

# The brand images an extraction seeds a style's folder with (logo, hero, social image).
MAX_BRAND_IMAGES = 3
MAX_BRAND_BYTES = 12 * 1024 * 1024
ASSET_SEMANTICS = styles_service.AssetSemantics(describe_image, embed_texts, rank_by_similarity)


class StyleExtraction:
    def __init__(self, services: Services, store: OutputStore) -> None:
        self.services = services
        self.store = store

    def run(self, job: Job, control: JobControl) -> Outcome:
        settings = self.services.settings
        policy = FetchPolicy.from_settings(settings, settings.max_image_bytes)
        control.progress(0.1, "reading the site")
        url = ExtractStyleInputs.model_validate(job.inputs).url
        extraction = extract_style(url, lambda page: fetch(page, policy))
        control.progress(0.8, "keeping the brand images")
        style_id = new_id()
        media: list[Media] = []
        try:
            drafts = self._store_brand_images(job, style_id, extraction.brand_images, media)
            assets = styles_service.build_assets(ASSET_SEMANTICS, style_id, job.account_id, drafts)
        except BaseException:
            self.store.discard(media)
            raise
        # The logo comes first and always fits the budget.
        logo_key = drafts[0].storage_key if extraction.logo is not None else None
        detail = extraction.style
        style = Style(
            id=style_id,
            account_id=job.account_id,
            job_id=job.id,
            name=detail["name"],
            url=detail["url"],
            description=detail["description"],
            tagline=detail["tagline"],
            colours=detail["colours"],
            typography=detail["typography"],
            tone=detail["tone"],
            aesthetic=detail["aesthetic"],
            logo_key=logo_key,
        )
        result = StyleResult(style=SavedStyleRef(id=style_id))
        return Outcome(result, media, None, [style, *assets])

    def _store_brand_images(
        self, job: Job, style_id: str, images: list[BrandImage], media: list[Media]
    ) -> list[styles_service.AssetDraft]:
        """Re-host the site's brand images (logo first) as the style's seed assets, adding their
        rows to `media` as they are stored: the same bytes once, at most MAX_BRAND_IMAGES and
        MAX_BRAND_BYTES in all."""
        drafts: list[styles_service.AssetDraft] = []
        seen: set[str] = set()
        budget = MAX_BRAND_BYTES
        for image in images[:MAX_BRAND_IMAGES]:
            digest = hashlib.sha256(image.body).hexdigest()
            if digest in seen or len(image.body) > budget:
                continue
            seen.add(digest)
            budget -= len(image.body)
            content_type = image.content_type or "application/octet-stream"
            extension = mimetypes.guess_extension(content_type) or ""
            key = f"styles/{style_id}/{image.role}{extension}"
            row = self.store.put_media(
                job, "brand", key, image.body, content_type, image_shape(image.body)
            )
            media.append(row)
            path_name = os.path.basename(urlsplit(image.url).path) if image.url else ""
            drafts.append(
                styles_service.describe_draft(
                    ASSET_SEMANTICS,
                    media_id=row.id,
                    storage_key=key,
                    name=path_name or f"{image.role}{extension}",
                    alt_text=image.alt_text,
                    surrounding_text=image.surrounding_text,
                    source="brand",
                    body=image.body,
                    content_type=content_type,
                )
            )
        return drafts
