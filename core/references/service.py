"""InputImage images: the one resolver behind every field that names an input image.

A reference is a string that is one of (SPEC.md "InputImage image"):
- the id of one of the caller's completed uploads, generated images or image jobs (a job means
  its first image);
- a URL this service's storage issued for one of those (a result or upload URL);
- any other URL: a public image fetched by the SSRF-safe fetcher and re-hosted in storage.

Resolution happens when a job is created, so a job's inputs name only objects in our storage
and workers never fetch anything from outside.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from core.clock import utcnow
from core.errors import InvalidInput
from core.fetch import FetchPolicy, FetchRefused, fetch
from core.ids import new_id, parse_uuid
from core.images import NotAnImage, TooManyPixels, inspect_image
from core.jobs.contract import ImagesResult, InputImage, JobStatus, StoredImage
from core.references import repository
from core.services import Services
from core.tables import JobRow, Media
from core.uploads import repository as uploads_repository

NOT_FOUND = "reference not found"


def _input_image(media: Media) -> InputImage:
    """The form a job's inputs keep of an image in our storage."""
    return InputImage(
        media_id=media.id,
        key=media.storage_key,
        content_type=media.content_type,
        width=media.width or 0,
        height=media.height or 0,
    )


class UnresolvedReferences(InvalidInput):
    """Some fields did not resolve; `details` maps each field path to the reason."""

    def __init__(
        self, details: dict[str, str], message: str = "A referenced image could not be resolved"
    ) -> None:
        super().__init__(details, message)
        self.details: dict[str, str] = details


class _Unresolved(Exception):
    pass


def resolve_references(
    services: Services,
    account_id: str,
    fields: Mapping[str, str],
    fetch_seconds: float | None = None,
) -> dict[str, InputImage]:
    """Resolve every field (field path -> reference string, e.g. {"references[0]": "..."} or
    {"image": "..."}) for this account, or raise UnresolvedReferences naming each failure.
    `fetch_seconds` shortens the fetches' deadline below the configured one."""
    resolved: dict[str, InputImage] = {}
    unresolved: dict[str, str] = {}
    public: dict[str, str] = {}
    for field, value in fields.items():
        try:
            own = _resolve_own(services, account_id, value)
        except _Unresolved as error:
            unresolved[field] = str(error)
            continue
        if own is None:
            public[field] = value
        else:
            resolved[field] = own
    # Fetches are slow (up to the fetch timeout each): run them side by side.
    with ThreadPoolExecutor(max_workers=max(1, len(public))) as pool:
        outcomes = {
            field: pool.submit(_fetch_and_store, services, account_id, url, fetch_seconds)
            for field, url in public.items()
        }
        for field, outcome in outcomes.items():
            try:
                resolved[field] = outcome.result()
            except _Unresolved as error:
                unresolved[field] = str(error)
    if unresolved:
        raise UnresolvedReferences(unresolved)
    return {field: resolved[field] for field in fields}


def _resolve_own(services: Services, account_id: str, value: str) -> InputImage | None:
    """The caller's own image this value names, or None for a URL to fetch."""
    object_id = parse_uuid(value)
    if object_id is not None:
        return _by_id(services, account_id, object_id)
    try:
        scheme = urlsplit(value).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https"):
        raise _Unresolved("must be an upload id, an image or job id, or an https URL")
    key = services.storage.key_from_url(value)
    if key is None:
        return None
    with services.db.read() as session:
        media = repository.media_owned_by_key(session, key, account_id)
        upload = (
            uploads_repository.get_owned_by_staging_key(session, key, account_id)
            if media is None
            else None
        )
    if media is not None:
        return _image(media)
    if upload is not None:
        return _by_id(services, account_id, upload.id)
    raise _Unresolved(NOT_FOUND)


def _by_id(services: Services, account_id: str, object_id: str) -> InputImage:
    with services.db.read() as session:
        media = repository.media_owned(session, object_id, account_id)
        if media is not None:
            return _image(media)
        job = repository.image_job_owned(session, object_id, account_id)
        if job is not None:
            images = _images_of(job)
            if not images:
                state = "failed" if job.status == JobStatus.FAILED else f"is {job.status}"
                raise _Unresolved(f"the job {state}; it has no image")
            first = repository.media_owned(session, images[0].id, account_id)
            if first is None:
                raise _Unresolved(NOT_FOUND)
            return _image(first)
        if uploads_repository.get_owned(session, object_id, account_id) is not None:
            raise _Unresolved("the upload is not completed (POST /uploads/{id}/complete)")
    raise _Unresolved(NOT_FOUND)


def _images_of(job: JobRow) -> list[StoredImage]:
    """A completed image job's images (none for a job not completed)."""
    if job.status != JobStatus.COMPLETED or job.result is None:
        return []
    return ImagesResult.model_validate(job.result).images


def _image(media: Media) -> InputImage:
    if not media.content_type.startswith("image/"):
        raise _Unresolved("is not an image")
    return _input_image(media)


def _fetch_and_store(
    services: Services, account_id: str, url: str, fetch_seconds: float | None
) -> InputImage:
    settings = services.settings
    policy = FetchPolicy.from_settings(settings, settings.max_image_bytes)
    if fetch_seconds is not None:
        policy = replace(policy, timeout_seconds=min(policy.timeout_seconds, fetch_seconds))
    try:
        fetched = fetch(url, policy)
    except FetchRefused as error:
        raise _Unresolved(f"could not be fetched: {error}") from None
    try:
        facts = inspect_image(fetched.body, settings.max_image_pixels)
    except (NotAnImage, TooManyPixels) as error:
        raise _Unresolved(f"the fetched file {error}") from None
    media_id = new_id()
    media = Media(
        id=media_id,
        account_id=account_id,
        kind="reference",
        storage_key=f"references/{media_id}{facts.extension}",
        content_type=facts.content_type,
        width=facts.width,
        height=facts.height,
        size_bytes=len(fetched.body),
        created_at=utcnow(),
    )
    services.storage.put_bytes(media.storage_key, fetched.body, facts.content_type)
    with services.db.write() as session:
        repository.add_media(session, media)
    return _input_image(media)


@dataclass(frozen=True)
class SourceImage:
    """The image an edit, resize or upscale works on, and the job that made it (its parent)."""

    image: InputImage
    job_id: str


def resolve_source_image(services: Services, account_id: str, image_id: str) -> SourceImage:
    """`imageId` of edit, resize and upscale (CONTRACT.md): one of the caller's completed image
    jobs (its first image) or one of their generated images. Raises UnresolvedReferences."""
    object_id = parse_uuid(image_id)
    if object_id is None:
        raise UnresolvedReferences({"imageId": "must be an image or image job id"})
    with services.db.read() as session:
        media = repository.generated_image_owned(session, object_id, account_id)
        if media is None:
            job = repository.image_job_owned(session, object_id, account_id)
            if job is None:
                raise UnresolvedReferences({"imageId": "image not found"})
            images = _images_of(job)
            if not images:
                raise UnresolvedReferences({"imageId": f"the job is {job.status}, not completed"})
            media = repository.generated_image_owned(session, images[0].id, account_id)
            if media is None:
                raise UnresolvedReferences({"imageId": "image not found"})
    if media.job_id is None:
        raise UnresolvedReferences({"imageId": "image not found"})
    return SourceImage(_input_image(media), media.job_id)
