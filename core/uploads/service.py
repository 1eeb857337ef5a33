"""The rules of uploads: presign a direct-to-storage PUT, then vet the bytes on complete.

The bytes first land at a staging key that only the upload URL can write. Completing decodes
them (the declared type is not trusted) and copies them to their final key, named by the type
found, so a later PUT to the still-valid upload URL can never change a completed upload.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from core import removal
from core.clock import utcnow
from core.errors import DomainError, InvalidInput, NotFound
from core.ids import new_id
from core.images import ACCEPTED_FORMATS, NotAnImage, TooManyPixels, inspect_image
from core.pagination import decode_cursor, page_of
from core.services import Services
from core.storage import StorageError
from core.tables import Media, Upload
from core.uploads import repository


class UploadNotFound(NotFound):
    """No such upload of this account."""

    def __init__(self) -> None:
        super().__init__("Upload")


class UploadInvalid(InvalidInput):
    """The uploaded file is missing or not an acceptable image; `reason` says why, as a
    predicate for "the file"."""

    def __init__(self, reason: str) -> None:
        super().__init__({"file": reason}, "The uploaded file was not accepted")


class UploadTooLarge(DomainError):
    """The uploaded image is over the byte or pixel limit (`reason` as for UploadInvalid)."""

    status = 413
    code = "PAYLOAD_TOO_LARGE"

    def __init__(self, reason: str) -> None:
        super().__init__("The uploaded file is too large", {"file": reason})


class UploadCompleted(DomainError):
    """A PUT to the URL of an upload already completed: the URL was for one upload, and bytes
    staged now would never be read."""

    status = 409
    code = "CONFLICT"

    def __init__(self) -> None:
        super().__init__("The upload is already completed; its URL takes no more PUTs")


@dataclass(frozen=True)
class Presigned:
    upload: Upload
    url: str
    expires_in: int


def staging_key(upload_id: str) -> str:
    return f"staging/{upload_id}"


def final_key(upload_id: str, extension: str) -> str:
    return f"uploads/{upload_id}{extension}"


def possible_final_keys(upload_id: str) -> list[str]:
    """Where a complete may have stored the upload's bytes: one key per accepted format. A
    complete whose database write failed (an outage) leaves them there with no row naming them
    until the upload is completed again, or purged as abandoned."""
    return [final_key(upload_id, extension) for _, extension in ACCEPTED_FORMATS.values()]


def presign(
    services: Services, account_id: str, filename: str, content_type: str, base_url: str
) -> Presigned:
    settings = services.settings
    moment = utcnow()
    upload_id = new_id()
    with services.db.write() as session:
        upload = repository.add(
            session,
            Upload(
                id=upload_id,
                account_id=account_id,
                filename=filename,
                declared_content_type=content_type,
                staging_key=staging_key(upload_id),
                created_at=moment,
                expires_at=moment + timedelta(seconds=settings.upload_url_seconds),
            ),
        )
    url = services.storage.upload_url_for(
        upload.staging_key,
        content_type=content_type,
        max_bytes=settings.max_image_bytes,
        base_url=base_url,
        expires_in=settings.upload_url_seconds,
    )
    return Presigned(upload, url, settings.upload_url_seconds)


def ensure_open(services: Services, key: str) -> None:
    """Before a PUT to a staging key (local storage): raises UploadCompleted once its upload is
    completed. S3 cannot be asked; there a late PUT's bytes go when the URL expires
    (`purge_completed_staging`)."""
    with services.db.read() as session:
        upload = repository.by_staging_key(session, key)
    if upload is not None and upload.completed_at is not None:
        raise UploadCompleted()


def complete(services: Services, account_id: str, upload_id: str) -> Media:
    """Vet the uploaded bytes and record them as media; completing twice gives the same media.
    Raises UploadNotFound, UploadInvalid or UploadTooLarge (the staged bytes are then deleted).
    """
    storage = services.storage
    settings = services.settings
    upload = _load(services, account_id, upload_id)
    done = _completed_media(services, upload)
    if done is not None:
        return done
    size = storage.size_of(upload.staging_key)
    if size is None:
        # A concurrent complete may have moved the bytes on already.
        done = _completed_media(services, upload)
        if done is not None:
            return done
        raise UploadInvalid("has not been uploaded (PUT it to the uploadUrl first)")
    if size > settings.max_image_bytes:
        storage.delete(upload.staging_key)
        raise UploadTooLarge(f"has {size} bytes; the limit is {settings.max_image_bytes}")
    try:
        data = storage.get_bytes(upload.staging_key)
    except StorageError:
        done = _completed_media(services, upload)
        if done is not None:
            return done
        raise
    try:
        facts = inspect_image(data, settings.max_image_pixels)
    except NotAnImage as error:
        storage.delete(upload.staging_key)
        raise UploadInvalid(str(error)) from None
    except TooManyPixels as error:
        storage.delete(upload.staging_key)
        raise UploadTooLarge(str(error)) from None
    # Not deleted when the database write below fails: a concurrent complete of the same
    # upload may have stored the same key and committed. `purge_abandoned` sees to it.
    stored_at = final_key(upload.id, facts.extension)
    storage.put_bytes(stored_at, data, facts.content_type)
    media = Media(
        id=upload.id,
        account_id=account_id,
        kind="upload",
        storage_key=stored_at,
        content_type=facts.content_type,
        width=facts.width,
        height=facts.height,
        size_bytes=len(data),
        created_at=utcnow(),
    )
    with services.db.write() as session:
        repository.complete(session, upload.id, utcnow(), media)
    storage.delete(upload.staging_key)
    done = _completed_media(services, upload)
    assert done is not None, "a completed upload has its media row"
    return done


def _load(services: Services, account_id: str, upload_id: str) -> Upload:
    with services.db.read() as session:
        upload = repository.get_owned(session, upload_id, account_id)
    if upload is None:
        raise UploadNotFound()
    return upload


def _completed_media(services: Services, upload: Upload) -> Media | None:
    with services.db.read() as session:
        return repository.media_of(session, upload)


# An upload left uncompleted this long after its URL expired is abandoned: its staged bytes
# (if any were PUT) are deleted so storage does not fill with them.
ABANDONED_AFTER = timedelta(hours=24)


def purge_abandoned(services: Services, batch: int = 500) -> int:
    """Delete abandoned uploads' staged bytes (and what an interrupted complete stored) and
    rows; returns how many went."""
    with services.db.read() as session:
        uploads = repository.abandoned(session, utcnow() - ABANDONED_AFTER, batch)
    for upload in uploads:
        for key in (upload.staging_key, *possible_final_keys(upload.id)):
            services.storage.delete(key)
        with services.db.write() as session:
            repository.remove(session, upload.id)
    return len(uploads)


def purge_completed_staging(services: Services, batch: int = 500) -> int:
    """Delete what was PUT to completed uploads' URLs after (or while) they completed, once
    those URLs have expired; returns how many uploads were seen to."""
    now = utcnow()
    with services.db.read() as session:
        uploads = repository.completed_with_expired_urls(session, now, batch)
    for upload in uploads:
        services.storage.delete(upload.staging_key)
    if uploads:
        with services.db.write() as session:
            repository.mark_staging_purged(session, [upload.id for upload in uploads], now)
    return len(uploads)


def delete(services: Services, account_id: str, upload_id: str) -> None:
    """Delete one of the account's uploads, completed or not: its bytes leave storage and every
    style folder. Refused while a pending or processing job uses it as an input. Jobs that
    used it and finished keep their own outputs."""
    with services.db.write() as session:
        upload = repository.get_owned(session, upload_id, account_id)
        if upload is None:
            raise UploadNotFound()
        media = repository.media_of(session, upload)
        stored = [media] if media is not None else []
        removal.refuse_if_input_of_job_in_flight(session, account_id, stored, "This upload")
        keys = [*removal.drop_media(session, stored), upload.staging_key]
        repository.delete_owned(session, upload.id)
    removal.delete_stored(services.storage, keys)


def filenames(services: Services, media_ids: list[str]) -> dict[str, str]:
    """The file names the uploads behind these media rows were sent with, by media id."""
    if not media_ids:
        return {}
    with services.db.read() as session:
        return repository.filenames_of(session, media_ids)


def list_page(
    services: Services, account_id: str, cursor: str | None, limit: int
) -> tuple[list[Media], str | None]:
    """The account's completed uploads, newest first, and the next cursor. Raises BadCursor."""
    after = decode_cursor(cursor) if cursor else None
    with services.db.read() as session:
        rows = list(repository.media_page(session, account_id, after, limit + 1))
    return page_of(rows, limit)
