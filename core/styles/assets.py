"""A style's linked folder of assets: linking the caller's images into it (each described and
embedded once, as it joins) and listing them."""

from __future__ import annotations

import mimetypes
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import numpy as np

from core.clock import utcnow
from core.db import Database
from core.errors import DomainError
from core.ids import new_id
from core.jobs import repository as jobs_repository
from core.pagination import decode_cursor, page_of
from core.references import repository as references_repository
from core.references.service import NOT_FOUND, UnresolvedReferences, resolve_references
from core.services import Services
from core.styles import repository
from core.styles.semantics import AssetSemantics
from core.styles.service import StyleNotFound, get_owned
from core.tables import Media, StyleAsset
from core.uploads import repository as uploads_repository

MAX_NAME_CHARS = 255
UNRESOLVED_IMAGES = "An image could not be resolved"
# The hard bounds of one link request (`POST /styles/{id}/assets`, answered while it waits):
# its public images are fetched side by side within LINK_FETCH_SECONDS (or the fetch timeout,
# if shorter), and describing its images may take LINK_DESCRIBE_SECONDS more; a process runs
# LINKS_AT_ONCE of them at a time, so slow sources can tie up no more of a gateway's threads.
LINK_FETCH_SECONDS = 8.0
LINK_DESCRIBE_SECONDS = 10.0
LINKS_AT_ONCE = 4
NOT_LINKED_IN_TIME = (
    f"not described within {LINK_DESCRIBE_SECONDS:.0f} s; link fewer images at once"
)
# A generated image is named after the first words of its prompt.
NAME_WORDS = 8


class LinksBusy(DomainError):
    """The process already runs its LINKS_AT_ONCE link requests."""

    status = 429
    code = "RATE_LIMIT_ERROR"

    def __init__(self) -> None:
        super().__init__(
            "Rate limit exceeded",
            {"reason": f"this server links images for {LINKS_AT_ONCE} requests at a time"},
            retry_after=1,
        )


class LinkSlots:
    """The link requests a process runs at once (LINKS_AT_ONCE); one more is refused at once."""

    def __init__(self, capacity: int = LINKS_AT_ONCE) -> None:
        self._slots = threading.BoundedSemaphore(capacity)

    @contextmanager
    def taken(self) -> Iterator[None]:
        if not self._slots.acquire(blocking=False):
            raise LinksBusy()
        try:
            yield
        finally:
            self._slots.release()


@dataclass(frozen=True)
class AssetDraft:
    """An image already in our storage, described, about to join a style's folder."""

    media_id: str
    storage_key: str
    name: str
    alt_text: str
    surrounding_text: str
    source: str
    # What the asset is embedded as (AssetSemantics.describe).
    description: str


def describe_draft(
    semantics: AssetSemantics,
    *,
    media_id: str,
    storage_key: str,
    name: str,
    alt_text: str,
    surrounding_text: str,
    source: str,
    body: bytes,
    content_type: str,
) -> AssetDraft:
    """A draft of an image whose bytes are at hand; the bytes are not kept, so a batch of
    drafts holds one image at a time."""
    name = name[:MAX_NAME_CHARS]
    return AssetDraft(
        media_id=media_id,
        storage_key=storage_key,
        name=name,
        alt_text=alt_text,
        surrounding_text=surrounding_text,
        source=source,
        description=semantics.describe(name, alt_text, surrounding_text, body, content_type),
    )


def build_assets(
    semantics: AssetSemantics, style_id: str, account_id: str, drafts: Sequence[AssetDraft]
) -> list[StyleAsset]:
    """Asset rows with their embeddings, computed here once (one batch through the model)."""
    vectors = semantics.embed([draft.description for draft in drafts])
    return [
        StyleAsset(
            id=new_id(),
            style_id=style_id,
            account_id=account_id,
            media_id=draft.media_id,
            storage_key=draft.storage_key,
            name=draft.name,
            alt_text=draft.alt_text,
            surrounding_text=draft.surrounding_text,
            source=draft.source,
            embedding=np.ascontiguousarray(vector, dtype=np.float32).tobytes(),
            created_at=utcnow(),
        )
        for draft, vector in zip(drafts, vectors, strict=True)
    ]


def _file_name(stem: str, content_type: str) -> str:
    extension = mimetypes.guess_extension(content_type) or ""
    return stem if os.path.splitext(stem)[1] else stem + extension


def _prompt_stem(prompt: str) -> str:
    words = re.findall(r"[\w']+", prompt.lower())[:NAME_WORDS]
    return "-".join(words) or "generated-image"


def _draft(
    services: Services, semantics: AssetSemantics, account_id: str, media: Media, reference: str
) -> AssetDraft:
    """Name, texts and source of one of the caller's images, described from its bytes."""
    surrounding_text = ""
    with services.db.read() as session:
        if media.kind == "upload":
            upload = uploads_repository.get_owned(session, media.id, account_id)
            source, name = "upload", upload.filename if upload else media.id
        elif media.kind == "reference":
            # A public URL the caller named, fetched and re-hosted: named as the URL names it.
            source = "upload"
            name = unquote(os.path.basename(urlsplit(reference).path)) or media.id
        elif media.kind == "brand":
            source, name = "brand", os.path.basename(media.storage_key)
        else:
            job = jobs_repository.get(session, media.job_id) if media.job_id else None
            prompt = str((job.inputs if job else {}).get("prompt") or "")
            source, name, surrounding_text = "generation", _prompt_stem(prompt), prompt
    return describe_draft(
        semantics,
        media_id=media.id,
        storage_key=media.storage_key,
        name=_file_name(name, media.content_type),
        alt_text="",
        surrounding_text=surrounding_text,
        source=source,
        body=services.storage.get_bytes(media.storage_key),
        content_type=media.content_type,
    )


def link_assets(
    services: Services,
    semantics: AssetSemantics,
    slots: LinkSlots,
    account_id: str,
    style_id: str,
    images: Sequence[str],
) -> list[StyleAsset]:
    """Link the caller's images (references, SPEC.md "Reference image") into the style's
    folder, all or none: the style's assets for them, in request order, once each. An image
    already in the folder keeps its asset. Raises StyleNotFound, LinksBusy, or
    UnresolvedReferences naming each `images[i]` that does not resolve (or was not fetched
    and described within the bounds above)."""
    if get_owned(services.db, account_id, style_id) is None:
        raise StyleNotFound()
    with slots.taken():
        return _link(services, semantics, account_id, style_id, images)


def _link(
    services: Services,
    semantics: AssetSemantics,
    account_id: str,
    style_id: str,
    images: Sequence[str],
) -> list[StyleAsset]:
    fields = {f"images[{index}]": value for index, value in enumerate(images)}
    try:
        resolved = resolve_references(services, account_id, fields, LINK_FETCH_SECONDS)
    except UnresolvedReferences as error:
        raise UnresolvedReferences(error.details, UNRESOLVED_IMAGES) from None
    # media id -> the field that first named it (a request may name one image twice).
    wanted: dict[str, str] = {}
    for field, reference in resolved.items():
        wanted.setdefault(reference.media_id, field)
    drafts: list[AssetDraft] = []
    with services.db.read() as session:
        linked = repository.assets_of_media(session, style_id, list(wanted))
        new_media = [
            (field, references_repository.media_owned(session, media_id, account_id))
            for media_id, field in wanted.items()
            if media_id not in linked
        ]
    describe_until = time.monotonic() + LINK_DESCRIBE_SECONDS
    for index, (field, row) in enumerate(new_media):
        if row is None:  # resolved a moment ago, so only a concurrent delete gets here
            raise UnresolvedReferences({field: NOT_FOUND}, UNRESOLVED_IMAGES)
        if time.monotonic() > describe_until:
            late = {late_field: NOT_LINKED_IN_TIME for late_field, _ in new_media[index:]}
            raise UnresolvedReferences(late, UNRESOLVED_IMAGES)
        drafts.append(_draft(services, semantics, account_id, row, fields[field]))
    made = {
        asset.media_id: asset for asset in build_assets(semantics, style_id, account_id, drafts)
    }
    with services.db.write() as session:
        # Holding the style's row makes concurrent links of the same image wait, then skip it.
        if repository.get_owned(session, style_id, account_id, for_update=True) is None:
            raise StyleNotFound()
        linked = repository.assets_of_media(session, style_id, list(wanted))
        repository.add_assets(session, [a for a in made.values() if a.media_id not in linked])
    return [linked.get(media_id) or made[media_id] for media_id in wanted]


def list_assets(
    db: Database, account_id: str, style_id: str, cursor: str | None, limit: int
) -> tuple[list[StyleAsset], str | None]:
    """One page of the style's assets, newest first. Raises StyleNotFound, BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        if repository.get_owned(session, style_id, account_id) is None:
            raise StyleNotFound()
        return page_of(list(repository.asset_page(session, style_id, after, limit + 1)), limit)
