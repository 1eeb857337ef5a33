"""A style extraction as the worker runs it: the site read (rendered in this process's one
browser, or as text) through the project's SSRF-safe fetcher, its brand images checked and
re-hosted as the style's first assets, and the style row made to be saved with the job's
completion (so a cancelled extraction saves nothing).

Extracting a site the account already has a style of (the same `core.styles.sites` address)
saves over that style, keeping its id and the images linked into its folder, unless the job
asked for a new one (`asNew`); the earlier extraction's brand images are retired in the same
transaction (`core.styles.service.ExtractedStyle`).

`StyleExtractor` holds the worker's Chromium: started on the first extraction (about a second),
reused by every extraction after, restarted by `pipelines.styles.Browser` when it dies, closed by
`close()` when the worker stops (`JobRunner.close`). Without Chromium (not installed, or
`SFUMATO_CHROMIUM=off`) pages are read as text, and the job's note says so.

Every brand image the extraction keeps passes `vet_brand_image`, the check uploads and fetched
references pass (`core.images.inspect_image`), and again as it is stored.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from urllib.parse import urlsplit

from core.fetch import Fetched, FetchPolicy, fetch
from core.ids import new_id
from core.images import ImageFacts, NotAnImage, TooManyPixels, inspect_image
from core.jobs.contract import NOTES_SEPARATOR, ExtractStyleJobInputs, SavedStyleRef, StyleResult
from core.services import Services
from core.settings import Settings
from core.styles import service as styles_service
from core.styles.assets import AssetDraft, build_assets, describe_draft
from core.styles.payload import stored as stored_payload
from core.styles.payload import validate_style
from core.styles.semantics import AssetSemantics
from core.styles.service import ExtractedStyle
from core.styles.sites import site_address
from core.tables import JobRow, Media, Style
from pipelines.base import ExtractStyleInput, JobControl
from pipelines.registry import PipelineRegistry
from pipelines.styles import (
    BrandImage,
    Browser,
    Extraction,
    RenderBudget,
    find_chromium,
    shared_browser,
)
from pipelines.styles.extract import TEXT_ONLY_NOTE
from workers.storing import Outcome, OutputStore

log = logging.getLogger(__name__)

# The brand images an extraction seeds a style's folder with (logo, hero, social image).
MAX_BRAND_IMAGES = 3
MAX_BRAND_BYTES = 12 * 1024 * 1024


def vet_brand_image(body: bytes, max_pixels: int) -> ImageFacts | None:
    """What a brand image really is, if it is one the service serves (PNG, JPEG, GIF or WebP
    that decodes within the pixel limit); None for anything else (HTML under an image type)."""
    try:
        return inspect_image(body, max_pixels)
    except (NotAnImage, TooManyPixels):
        return None


def brand_image_type(body: bytes, max_pixels: int) -> str | None:
    """`vet_brand_image` as the extraction's `ImageCheck`: the real content type, or None."""
    facts = vet_brand_image(body, max_pixels)
    return facts.content_type if facts is not None else None


class StyleExtractor:
    """This process's way to read a site: its one browser, or text when there is none."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.budget = RenderBudget(seconds=settings.style_render_seconds)
        self.browser: Browser | None = None
        self.text_only_reason: str | None = None
        executable = find_chromium(settings.chromium)
        if executable is not None:
            self.browser = shared_browser(
                executable, settings.style_render_memory_mb, settings.chromium_sandbox
            )
        elif settings.chromium.strip().lower() == "off":
            self.text_only_reason = "rendering is turned off (SFUMATO_CHROMIUM=off)"
        else:
            where = settings.chromium or "chromium on PATH"
            self.text_only_reason = f"Chromium is not installed ({where} not found)"
            log.warning("style extraction reads pages as text only: %s", self.text_only_reason)

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()

    def extract(self, pipelines: PipelineRegistry, url: str, control: JobControl) -> Extraction:
        """The style of the site at `url` as the registry's extract style pipeline reads it,
        lent this process's browser; every request through the SSRF-safe fetcher."""
        settings = self.settings
        policy = FetchPolicy.from_settings(settings, settings.max_image_bytes)
        image_type = functools.partial(brand_image_type, max_pixels=settings.max_image_pixels)

        def fetcher(target: str) -> Fetched:
            return fetch(target, policy)

        request = ExtractStyleInput(url, fetcher, image_type, self.browser, self.budget)
        extraction = pipelines.get("extract_style").run(request, control)
        if self.text_only_reason is not None:
            extraction.notes.append(TEXT_ONLY_NOTE.format(reason=self.text_only_reason))
        return extraction


class StyleExtraction:
    def __init__(
        self,
        services: Services,
        pipelines: PipelineRegistry,
        semantics: AssetSemantics,
        store: OutputStore,
    ) -> None:
        self.services = services
        self.pipelines = pipelines
        self.semantics = semantics
        self.store = store
        self.extractor = StyleExtractor(services.settings)

    def close(self) -> None:
        self.extractor.close()

    def run(self, job: JobRow, control: JobControl) -> Outcome:
        control.progress(0.1, "reading the site")
        inputs = ExtractStyleJobInputs.model_validate(job.inputs)
        extraction = self.extractor.extract(self.pipelines, inputs.url, control)
        control.progress(0.8, "keeping the brand images")
        site = site_address(inputs.url)
        existing = (
            None
            if inputs.as_new
            else styles_service.style_of_site(self.services.db, job.account_id, site)
        )
        style_id = existing.id if existing is not None else new_id()
        media: list[Media] = []
        try:
            stored = self._store_brand_images(job, style_id, extraction.brand_images, media)
            drafts = [draft for _, draft in stored]
            assets = build_assets(self.semantics, style_id, job.account_id, drafts)
        except BaseException:
            self.store.discard(media)
            raise
        logo_key = next((draft.storage_key for role, draft in stored if role == "logo"), None)
        detail = validate_style(extraction.style)
        style = Style(
            id=style_id,
            account_id=job.account_id,
            job_id=job.id,
            name=detail.name,
            url=detail.url,
            site=site,
            description=detail.description,
            tagline=detail.tagline,
            colours=stored_payload(detail.colours),
            typography=stored_payload(detail.typography),
            tone=detail.tone,
            aesthetic=detail.aesthetic,
            logo_key=logo_key,
        )
        result = StyleResult(style=SavedStyleRef(id=style_id))
        message = NOTES_SEPARATOR.join(extraction.notes) or None
        saving = ExtractedStyle(style, assets)
        return Outcome(
            result,
            media,
            message,
            save=saving.save,
            saved=lambda: saving.delete_retired(self.services.storage),
        )

    def _store_brand_images(
        self, job: JobRow, style_id: str, images: list[BrandImage], media: list[Media]
    ) -> list[tuple[str, AssetDraft]]:
        """Re-host the site's brand images (logo first) as the style's seed assets, adding their
        rows to `media` as they are stored: each checked as uploads and references are (stored
        as the PNG, JPEG, GIF or WebP it really is, anything else refused), the same bytes once,
        at most MAX_BRAND_IMAGES and MAX_BRAND_BYTES in all. Returns (role, draft) pairs."""
        drafts: list[tuple[str, AssetDraft]] = []
        seen: set[str] = set()
        budget = MAX_BRAND_BYTES
        for image in images[:MAX_BRAND_IMAGES]:
            digest = hashlib.sha256(image.body).hexdigest()
            if digest in seen or len(image.body) > budget:
                continue
            facts = vet_brand_image(image.body, self.services.settings.max_image_pixels)
            if facts is None:
                log.warning("job %s: the %s image is not an image; not stored", job.id, image.role)
                continue
            seen.add(digest)
            budget -= len(image.body)
            # Under the job too: a re-extraction stores beside the images it replaces.
            key = f"styles/{style_id}/{job.id}/{image.role}{facts.extension}"
            row = self.store.put_media(
                job, "brand", key, image.body, facts.content_type, (facts.width, facts.height)
            )
            media.append(row)
            path_name = os.path.basename(urlsplit(image.url).path) if image.url else ""
            stem = os.path.splitext(path_name)[0] if path_name else image.role
            draft = describe_draft(
                self.semantics,
                media_id=row.id,
                storage_key=key,
                name=f"{stem}{facts.extension}",
                alt_text=image.alt_text,
                surrounding_text=image.surrounding_text,
                source="brand",
                body=image.body,
                content_type=facts.content_type,
            )
            drafts.append((image.role, draft))
        return drafts
