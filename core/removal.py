"""What deleting one of an account's things (a finished job, an upload, a style) shares: the
check that no job in flight still needs its files, taking its media out of every style's folder
and its rows away in one transaction, then removing the stored files once that committed."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from sqlalchemy.orm import Session

from core.errors import Conflict
from core.jobs import repository as jobs_repository
from core.storage import Storage, StorageError
from core.styles import repository as styles_repository
from core.tables import Media
from core.thumbnails import repository as thumbnails_repository

log = logging.getLogger(__name__)


class InputOfJobInFlight(Conflict):
    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} is an input of a pending or processing job; wait for it to finish or "
            "cancel it, then delete"
        )


def refuse_if_input_of_job_in_flight(
    session: Session, account_id: str, media: Sequence[Media], what: str
) -> None:
    """A job's inputs name the stored files it reads (core/references): deleting one under a
    job in flight would fail that job."""
    if inputs_of_jobs_in_flight(session, account_id, media):
        raise InputOfJobInFlight(what)


def inputs_of_jobs_in_flight(
    session: Session, account_id: str, media: Sequence[Media]
) -> list[Media]:
    """Those of `media` that a pending or processing job of the account reads."""
    if not media:
        return []
    texts = [json.dumps(inputs) for inputs in jobs_repository.in_flight_inputs(session, account_id)]
    return [item for item in media if any(item.storage_key in text for text in texts)]


def drop_media(session: Session, media: Sequence[Media]) -> list[str]:
    """Unlink the media from every style folder and delete their rows and their thumbnails'
    (the dashboard's small renditions); the storage keys of all of them."""
    ids = [item.id for item in media]
    styles_repository.unlink_media(session, ids)
    thumbnail_keys = thumbnails_repository.delete_of(session, ids)
    jobs_repository.delete_media(session, ids)
    return [item.storage_key for item in media] + thumbnail_keys


def delete_stored(storage: Storage, keys: Sequence[str]) -> None:
    """After the rows are gone: a file left behind is only space, so a failure is logged."""
    for key in keys:
        try:
            storage.delete(key)
        except (StorageError, OSError) as error:
            log.warning("stored file %s of a deleted resource was not removed: %s", key, error)


def keys_under(storage: Storage, prefix: str) -> list[str]:
    """The stored files under `prefix`, or none when the store cannot list them now (what is
    left behind is only space, as above)."""
    try:
        return storage.keys_under(prefix)
    except (StorageError, OSError) as error:
        log.warning("could not list the stored files under %s: %s", prefix, error)
        return []
