"""Saved brand styles: reading them, saving an extraction's, what one lends a generation,
deleting one. Their linked
folders of assets are `assets.py`, search over them `search.py`, the sentence model's part
`semantics.py`."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from core import removal
from core.db import Database
from core.errors import NotFound
from core.jobs import repository as jobs_repository
from core.jobs.contract import LentStyle
from core.pagination import decode_cursor, page_of
from core.services import Services
from core.storage import Storage
from core.styles import repository
from core.styles.payload import GradientColour, SolidColour, colours_of
from core.tables import Media, Style, StyleAsset


class StyleNotFound(NotFound):
    """No style with this id belongs to the caller."""

    def __init__(self) -> None:
        super().__init__("Style")


def get_owned(db: Database, account_id: str, style_id: str) -> Style | None:
    with db.read() as session:
        return repository.get_owned(session, style_id, account_id)


def style_of_site(db: Database, account_id: str, site: str) -> Style | None:
    """The account's style of this site (`sites.site_address`) that a new extraction of it
    updates: the newest, where `asNew` made several."""
    with db.read() as session:
        return repository.newest_of_site(session, account_id, site)


def list_page(
    db: Database, account_id: str, cursor: str | None, limit: int
) -> tuple[list[Style], str | None]:
    """One page and the cursor of the next (None on the last page). Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with db.read() as session:
        return page_of(list(repository.page(session, account_id, after, limit + 1)), limit)


def palette_of(style: Style) -> list[str]:
    """The style's solid colours, in their order of importance."""
    return [colour.hex for colour in colours_of(style.colours) if isinstance(colour, SolidColour)]


def generation_hints(style: Style) -> LentStyle:
    """What a generation takes from a style (kept in the job's inputs, so the job stands alone
    if the style changes later): palette (solids, then gradient stops), tone, aesthetic."""
    gradient_stops = [
        stop.hex
        for colour in colours_of(style.colours)
        if isinstance(colour, GradientColour)
        for stop in colour.stops
    ]
    return LentStyle(
        style_id=style.id,
        palette=palette_of(style) + gradient_stops,
        tone=list(style.tone),
        aesthetic=style.aesthetic,
    )


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


@dataclass
class ExtractedStyle:
    """What an extraction saves with its job's completion (`save`, in that transaction): its
    style, new or saved over the account's style of the same site (the same id: its created
    time and the images linked into its folder stay), and the brand images it stored. Saving
    over a style retires the brand images an earlier extraction stored: they leave its folder,
    and their rows go unless another style's folder links them; one that a pending or
    processing job reads stays (deleted with the style). Their files are deleted once the
    completion committed (`delete_retired`). The style row is locked first, so two
    re-extractions finishing together save one after the other: the last one's fields and
    brand images remain."""

    style: Style
    assets: list[StyleAsset]
    retired_keys: list[str] = field(default_factory=list)

    def save(self, session: Session) -> None:
        style = self.style
        repository.get_owned(session, style.id, style.account_id, for_update=True)
        # Merged: saved over the row of that id if it exists (a style deleted meanwhile comes
        # back); its created time, not set here, is kept.
        session.merge(style)
        repository.add_assets(session, self.assets)
        retired: list[Media] = []
        if style.job_id is not None:
            replaced = repository.brand_media_not_of_job(session, style.id, style.job_id)
            in_use = removal.inputs_of_jobs_in_flight(session, style.account_id, replaced)
            kept = {item.id for item in in_use}
            retired = [item for item in replaced if item.id not in kept]
        ids = [item.id for item in retired]
        shared = repository.media_linked_elsewhere(session, ids, style.id)
        repository.unlink_from_style(session, style.id, ids)
        self.retired_keys = removal.drop_media(
            session, [item for item in retired if item.id not in shared]
        )

    def delete_retired(self, storage: Storage) -> None:
        removal.delete_stored(storage, self.retired_keys)
