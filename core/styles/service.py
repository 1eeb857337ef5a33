"""Saved brand styles: reading them, what one lends a generation, and its linked folder of
assets with semantic search over them."""

from __future__ import annotations

import mimetypes
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
from sqlalchemy import Connection

from core import removal
from core.clock import utcnow
from core.db import Database
from core.errors import DomainError, NotFound
from core.ids import new_id
from core.jobs import repository as jobs_repository
from core.jobs.contract import LentStyle
from core.pagination import decode_cursor, page_of
from core.references import repository as references_repository
from core.references.service import NOT_FOUND, UnresolvedReferences, resolve_references
from core.services import Services
from core.styles import repository
from core.tables import Media, Style, StyleAsset
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

Describe = Callable[[str, str, str, bytes, str | None], str]
Embed = Callable[[Sequence[str]], np.ndarray]
Rank = Callable[[np.ndarray, np.ndarray, int], list[tuple[int, float]]]


@dataclass(frozen=True)
class AssetSemantics:
    """How an asset and a query become vectors and how vectors are ranked. These are the
    sentence model's functions (`pipelines.styles`: describe_image, embed_texts,
    rank_by_similarity), handed in by whoever wires the service, so core never imports
    pipelines."""

    describe: Describe
    embed: Embed
    rank: Rank


class StyleNotFound(NotFound):
    """No style with this id belongs to the caller."""

    def __init__(self) -> None:
        super().__init__("Style")


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


@dataclass(frozen=True)
class SearchHit:
    asset_id: str
    name: str
    storage_key: str
    similarity: float


def get_owned(db: Database, account_id: str, style_id: str) -> Style | None:
    with db.read() as session:
        return repository.get_owned(session, style_id, account_id)


def list_page(
    db: Database, account_id: str, cursor: str | None, limit: int
) -> tuple[list[Style], str | None]:
    """One page and the cursor of the next (None on the last page). Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        return page_of(list(repository.page(session, account_id, after, limit + 1)), limit)


def palette_of(style: Style) -> list[str]:
    """The style's solid colours, in their order of importance."""
    return [item["hex"] for item in style.colours if item.get("type") == "solid"]


def generation_hints(style: Style) -> LentStyle:
    """What a generation takes from a style (kept in the job's inputs, so the job stands alone
    if the style changes later): palette (solids, then gradient stops), tone, aesthetic."""
    gradient_stops = [
        stop["hex"]
        for item in style.colours
        if item.get("type") == "gradient"
        for stop in item.get("stops", [])
    ]
    return LentStyle(
        style_id=style.id,
        palette=palette_of(style) + gradient_stops,
        tone=list(style.tone),
        aesthetic=style.aesthetic,
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


@dataclass(frozen=True)
class SearchFolder:
    """A style's assets as search ranks them: their ids, names and keys, and the matrix of
    their embeddings (one row each)."""

    version: tuple[int, Any]
    ids: list[str]
    names: list[str]
    keys: list[str]
    matrix: np.ndarray


class FolderCache:
    """The folders searched lately, per process, so a search reads 1.5 MB of embeddings only
    when the folder changed. Each use checks the folder's version (count and newest asset) in
    the database, so a gateway sees assets that another one added at once."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._folders: OrderedDict[str, SearchFolder] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, style_id: str, version: tuple[int, Any]) -> SearchFolder | None:
        with self._lock:
            folder = self._folders.get(style_id)
            if folder is None or folder.version != version:
                return None
            self._folders.move_to_end(style_id)
            return folder

    def put(self, style_id: str, folder: SearchFolder) -> None:
        with self._lock:
            self._folders[style_id] = folder
            self._folders.move_to_end(style_id)
            while len(self._folders) > self.capacity:
                self._folders.popitem(last=False)


def _read_folder(connection: Connection, style_id: str, version: tuple[int, Any]) -> SearchFolder:
    rows = repository.search_matrix(connection, style_id)
    matrix = np.frombuffer(b"".join(row.embedding for row in rows), dtype=np.float32)
    return SearchFolder(
        version=version,
        ids=[row.id for row in rows],
        names=[row.name for row in rows],
        keys=[row.storage_key for row in rows],
        matrix=matrix.reshape(len(rows), -1),
    )


def search(
    db: Database,
    semantics: AssetSemantics,
    folders: FolderCache,
    account_id: str,
    style_id: str,
    query: str,
    limit: int,
) -> list[SearchHit]:
    """The `limit` assets closest to the query, by cosine similarity of their stored
    embeddings to the query's (embedded now), most similar first. Raises StyleNotFound."""
    with db.statements() as connection:
        found = repository.folder_version(connection, style_id, account_id)
        if found is None:
            raise StyleNotFound()
        version = (int(found[0]), found[1])
        if version[0] == 0:
            return []
        folder = folders.get(style_id, version)
        if folder is None:
            folder = _read_folder(connection, style_id, version)
            folders.put(style_id, folder)
    vector = semantics.embed([query])[0]
    return [
        SearchHit(folder.ids[index], folder.names[index], folder.keys[index], similarity)
        for index, similarity in semantics.rank(vector, folder.matrix, limit)
    ]


def delete(services: Services, account_id: str, style_id: str) -> None:
    """Delete one of the account's styles: its folder goes, and so do the brand images its
    extraction stored (the logo among them) unless another style's folder links them too;
    the uploads and generations linked into it stay. Jobs created with the style keep what
    they took from it (core/jobs/contract.LentStyle); a new request naming it is a 400."""
    with services.db.write() as session:
        style = repository.get_owned(session, style_id, account_id, for_update=True)
        if style is None:
            raise StyleNotFound()
        linked = [asset.media_id for asset in repository.assets_of_style(session, style.id)]
        shared = repository.media_linked_elsewhere(session, linked, style.id)
        brand = [
            media
            for media in jobs_repository.media_by_ids(session, linked)
            if media.kind == "brand" and media.id not in shared
        ]
        removal.refuse_if_input_of_job_in_flight(
            session, account_id, brand, "A brand image of this style"
        )
        repository.delete_style(session, style.id)
        keys = removal.drop_media(session, brand)
    removal.delete_stored(services.storage, keys)
