"""The jobs gallery, one job's page, its live progress and poster, cancel, delete, and
thumbnails."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import RedirectResponse, StreamingResponse

from core.jobs import service as jobs_service
from core.jobs.contract import JobStatus, JobType, VideoResult, result_of
from core.thumbnails import service as thumbnails
from core.webhooks import service as webhooks
from gateway.dashboard.gallery import Gallery
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PageSize,
    PostedDep,
    error_page,
    see_other,
    spend,
)
from gateway.dependencies import url_signer_for
from gateway.jobs.events import JobEventStream, is_repeat_of_terminal
from gateway.jobs.presenter import (
    JobLike,
    JobPresenter,
    add_standing,
    preview_of,
    progress_of,
)
from gateway.jobs.reads import JobReads
from gateway.responses import JsonResponse

router = APIRouter(route_class=DashboardRoute)
PAGE_SIZE = 24
ALL_TYPES = tuple(JobType)
TYPE_FILTERS = {
    "": ALL_TYPES,
    "image": (JobType.IMAGE_GENERATE, JobType.IMAGE_EDIT),
    "video": (JobType.VIDEO_GENERATE,),
    "style": (JobType.STYLE_EXTRACT,),
}
STATUS_FILTERS = ("", *JobStatus)


def gallery_for(page: Page) -> Gallery:
    return Gallery(page.services, url_signer_for(page.request), page.runtime.job_reads.standings)


def _not_found(page: Page) -> Response:
    return error_page(
        page.request, 404, "Not found", "There is no such job in your account.", page.user
    )


@router.get("/jobs")
def jobs_page(
    page: PageDep,
    done: Annotated[str, Query(max_length=16)] = "",
    kind: Annotated[str, Query(alias="type", max_length=16)] = "",
    status: Annotated[str, Query(max_length=16)] = "",
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: PageSize = PAGE_SIZE,
) -> Response:
    kind = kind if kind in TYPE_FILTERS else ""
    status = status if status in STATUS_FILTERS else ""
    jobs, next_cursor = jobs_service.list_page(
        page.services.db, page.user.account_id, TYPE_FILTERS[kind], status or None, cursor, limit
    )
    return page.render(
        "jobs.html",
        nav="jobs",
        cards=gallery_for(page).cards(jobs),
        kind=kind,
        status_filter=status,
        type_filters=list(TYPE_FILTERS),
        status_filters=STATUS_FILTERS,
        next_cursor=next_cursor,
        limit=limit,
        notice="The job was deleted." if done == "deleted" else None,
    )


def _job_page(page: Page, job_id: str, status: int = 200, **context: str) -> Response:
    job = jobs_service.get_owned(page.services.db, page.user.account_id, job_id)
    if job is None:
        return _not_found(page)
    card = gallery_for(page).cards([job], originals=True)[0]
    deliveries = webhooks.deliveries_of_job(page.services.db, page.user.account_id, job_id)
    return page.render("job.html", status, nav="jobs", card=card, deliveries=deliveries, **context)


@router.get("/jobs/{job_id}")
def job_page(page: PageDep, job_id: str) -> Response:
    return _job_page(page, job_id)


@router.get("/jobs/{job_id}/card")
def job_card(page: PageDep, job_id: str, detail: bool = False) -> Response:
    """The card alone: what the page swaps in when a job it shows finishes."""
    job = jobs_service.get_owned(page.services.db, page.user.account_id, job_id)
    if job is None:
        return _not_found(page)
    card = gallery_for(page).cards([job], originals=detail)[0]
    return page.render("_card.html", card=card, detail=detail)


def _reads(page: Page) -> JobReads:
    return page.runtime.job_reads


@router.get("/jobs/{job_id}/events")
async def job_events(
    page: PageDep,
    job_id: str,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=64)] = None,
) -> Response:
    """The job as Server-Sent Events, the API's own stream (`GET /v1/jobs/{id}/events`) for
    the signed-in account: what the progress bars listen to."""
    reads = _reads(page)
    job = await reads.read(page.user.account_id, job_id, ALL_TYPES, wait=False)
    if job is None:
        return JsonResponse({"error": "not found"}, status_code=404)
    if is_repeat_of_terminal(job, last_event_id):
        return Response(status_code=204)
    stream = JobEventStream(
        reads,
        JobPresenter(url_signer_for(page.request)),
        page.services.settings.events_heartbeat_seconds,
        page.runtime.closing,
    )
    return StreamingResponse(
        stream.events(page.user.account_id, job_id, ALL_TYPES, last_event_id),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/jobs/{job_id}/poster")
async def job_poster(page: PageDep, job_id: str) -> Response:
    """A finished video's poster URL, once the worker has attached it: it is made just after
    the job completes, so the card swapped in at completion may come without one. A long-poll
    on the job's events (about `wait_seconds`); `posterUrl` null if it has not come by then."""

    def settled(job: JobLike) -> bool:
        """Nothing more to wait for: the poster is there, or no poster is coming."""
        awaiting = job.status == JobStatus.COMPLETED and job.type == JobType.VIDEO_GENERATE
        return not awaiting or _poster_key(job) is not None

    job = await _reads(page).read_when(page.user.account_id, job_id, ALL_TYPES, settled)
    if job is None:
        return JsonResponse({"error": "not found"}, status_code=404)
    key = _poster_key(job)
    return JsonResponse(
        {"posterUrl": url_signer_for(page.request).url(key) if key else None},
        headers={"Cache-Control": "no-store"},
    )


def _poster_key(job: JobLike) -> str | None:
    if job.status != JobStatus.COMPLETED or job.result is None:
        return None
    result = result_of(job.type, job.result)
    return result.video.thumbnail_key if isinstance(result, VideoResult) else None


@router.get("/jobs/{job_id}/progress")
async def job_progress(page: PageDep, job_id: str) -> Response:
    """Status, progress and standing (the API's fields) as one JSON read, for a browser whose
    event stream does not get through (a proxy that buffers): the page polls this instead."""
    reads = _reads(page)
    job = await reads.read(page.user.account_id, job_id, ALL_TYPES, wait=False)
    if job is None:
        return JsonResponse({"error": "not found"}, status_code=404)
    preview = preview_of(job)
    view = {
        "status": job.status,
        "progress": progress_of(job),
        "previewUrl": url_signer_for(page.request).url(preview) if preview else None,
    }
    standing = await reads.standing(job)
    if standing is not None:
        add_standing(view, job, standing)
    return JsonResponse(view, headers={"Cache-Control": "no-store"})


@router.post("/jobs/{job_id}/cancel")
def cancel_job(page: PostedDep, job_id: str) -> Response:
    spend(page, "POST", f"/v1/jobs/{job_id}/cancel")
    job = page.runtime.lifecycle.cancel(page.user.account_id, job_id)
    if job is None:
        return _not_found(page)
    return see_other(f"{PREFIX}/jobs/{job_id}")


@router.post("/jobs/{job_id}/delete")
def delete_job(page: PostedDep, job_id: str) -> Response:
    """The API's DELETE /v1/jobs/{id}, after the box that confirms it was ticked."""
    if page.field("confirm") != "yes":
        return _job_page(page, job_id, 400, message="Tick the box to confirm the deletion.")
    jobs_service.delete(page.services, page.user.account_id, job_id)
    return see_other(f"{PREFIX}/jobs?done=deleted")


@router.get("/media/{media_id}/thumbnail")
def thumbnail(page: PageDep, media_id: str) -> Response:
    """The image's small rendition (made once, on its first request), by redirect to its
    signed URL."""
    made = thumbnails.thumbnail_of(page.services, page.user.account_id, media_id)
    if made is None:
        return error_page(page.request, 404, "Not found", "There is no such image.", page.user)
    response = RedirectResponse(url_signer_for(page.request).url(made.storage_key), status_code=302)
    response.headers["Cache-Control"] = "private, max-age=3600"
    return response
