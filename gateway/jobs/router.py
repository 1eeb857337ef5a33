"""Job reads (with long-poll), the job list and cancel; also the per-type read aliases."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, Header, Query, Request, params
from fastapi.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from core.accounts.service import Caller
from core.errors import NotFound
from core.ids import parse_uuid
from core.jobs import service as jobs_service
from core.jobs.contract import IMAGE_TYPES, JobStatusValue, JobType, ListedJobTypeValue
from gateway.auth import CallerDep
from gateway.dependencies import (
    DatabaseDep,
    JobReadsDep,
    LifecycleDep,
    ServicesDep,
    SignerDep,
    job_reads_of,
    runtime_of,
    url_signer_for,
)
from gateway.jobs.events import JobEventStream, is_repeat_of_terminal
from gateway.jobs.presenter import JobPresenter
from gateway.jobs.reads import JobReads
from gateway.paths import JobId
from gateway.responses import RenderedJsonResponse
from gateway.schemas import (
    DELETE_ERROR_RESPONSES,
    ERROR_RESPONSES,
    ContractRoute,
    JobEnvelope,
    JobPage,
)
from gateway.signing import UrlSigner

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)

# The query strings of a job read in its usual shapes, each with the `wait` it gives.
USUAL_WAIT_QUERIES: dict[bytes, str | None] = {
    b"": None,
    b"wait=true": "true",
    b"wait=false": "false",
}


READ_ARGUMENTS = {"job_id", "caller", "reads", "signer", "wait"}


class JobReadRoute(ContractRoute):
    """A job read, the request every client makes most, in its usual shape (a job id that
    `parse_uuid` reads, no query or `wait=true|false` alone, a caller) is answered by this
    route's own ASGI app, which calls the endpoint with its arguments made by the same
    providers: FastAPI's dependency solving was a third of a read's CPU, and its per-request
    wrapper (a `Request`, two `AsyncExitStack`s, an exception-handling layer that the app's own
    already is) a tenth of what was left (docs/benchmarks.md). Any other shape goes FastAPI's
    way, so validation, its errors and the OpenAPI document stay FastAPI's, generated from the
    endpoint's signature; an error either way reaches the same exception handlers."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        super().__init__(path, endpoint, **options)
        # An endpoint that takes anything more would be called without it: refuse at start-up.
        if set(inspect.signature(endpoint).parameters) != READ_ARGUMENTS:
            raise TypeError(f"{endpoint.__name__} must take exactly {sorted(READ_ARGUMENTS)}")
        general = self.app

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            query = scope["query_string"]
            caller = scope.get("state", {}).get("caller")
            job_id = parse_uuid(scope["path_params"]["id"])
            if query not in USUAL_WAIT_QUERIES or not isinstance(caller, Caller) or not job_id:
                await general(scope, receive, send)
                return
            request = Request(scope, receive, send)
            response: Response = await endpoint(
                job_id=job_id,
                caller=caller,
                reads=await job_reads_of(request),
                signer=url_signer_for(request),
                wait=USUAL_WAIT_QUERIES[query],
            )
            await response(scope, receive, send)

        self.app = app


VIDEO_TYPES = (JobType.VIDEO_GENERATE,)
STYLE_TYPES = (JobType.STYLE_EXTRACT,)
ALL_TYPES = tuple(JobType)
ReadEndpoint = Callable[..., Coroutine[Any, Any, Any]]

WaitParam = Annotated[
    Literal["true", "false"] | None,
    Query(description="`true` holds the request until the job is terminal (about 55 s at most)"),
]


@dataclass(frozen=True)
class JobRead:
    path: str
    summary: str
    endpoint: ReadEndpoint


# The job reads, registered on the app itself by `install_job_reads` rather than on `router`.
JOB_READS: list[JobRead] = []


def job_read(path: str, summary: str) -> Callable[[ReadEndpoint], ReadEndpoint]:
    """Adds a job read to `JOB_READS`."""

    def register(endpoint: ReadEndpoint) -> ReadEndpoint:
        JOB_READS.append(JobRead(path, summary, endpoint))
        return endpoint

    return register


def install_job_reads(app: FastAPI, prefix: str, dependencies: Sequence[params.Depends]) -> None:
    """The job reads as the app's own first routes, each a `JobReadRoute`. FastAPI 0.165 finds
    a route of an included router by asking each included router in turn, each of its routes
    in turn, with its bookkeeping around every question: a job read, behind the images' and
    the videos' routers, paid about a quarter of its CPU to be found (docs/benchmarks.md). No
    other GET route has these paths' shapes, so being first decides nothing else; the reads
    take the same dependencies, responses and operation ids as an included route would."""
    for read in JOB_READS:
        app.router.add_api_route(
            prefix + read.path,
            read.endpoint,
            methods=["GET"],
            response_model=JobEnvelope,
            summary=read.summary,
            responses=ERROR_RESPONSES,
            dependencies=dependencies,
            route_class_override=JobReadRoute,
        )


async def _answer(
    reads: JobReads,
    signer: UrlSigner,
    caller: Caller,
    job_id: str,
    types: Sequence[str],
    wait: str | None,
) -> RenderedJsonResponse:
    body = await reads.answer(caller.account_id, job_id, types, wait == "true", signer)
    if body is None:
        raise NotFound("Job")
    return RenderedJsonResponse(body)


@job_read("/jobs/{id}", "Get any job")
async def get_job(
    job_id: JobId, caller: CallerDep, reads: JobReadsDep, signer: SignerDep, wait: WaitParam = None
) -> Any:
    return await _answer(reads, signer, caller, job_id, ALL_TYPES, wait)


@job_read("/images/{id}", "Get an image job")
async def get_image_job(
    job_id: JobId, caller: CallerDep, reads: JobReadsDep, signer: SignerDep, wait: WaitParam = None
) -> Any:
    return await _answer(reads, signer, caller, job_id, IMAGE_TYPES, wait)


@job_read("/videos/{id}", "Get a video job")
async def get_video_job(
    job_id: JobId, caller: CallerDep, reads: JobReadsDep, signer: SignerDep, wait: WaitParam = None
) -> Any:
    return await _answer(reads, signer, caller, job_id, VIDEO_TYPES, wait)


@job_read("/styles/extractions/{id}", "Get a style extraction job")
async def get_style_extraction(
    job_id: JobId, caller: CallerDep, reads: JobReadsDep, signer: SignerDep, wait: WaitParam = None
) -> Any:
    return await _answer(reads, signer, caller, job_id, STYLE_TYPES, wait)


JOB_EVENT_SCHEMA = {
    "type": "object",
    "required": ["id", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z_]+/[0-9]{1,4}(/[0-9]{1,9})?$"},
        "event": {"type": "string"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"$ref": "#/components/schemas/JobEnvelope"},
        },
    },
}


@router.get(
    "/jobs/{id}/events",
    summary="Stream a job's progress (Server-Sent Events)",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": (
                'A `text/event-stream`: `data: {"data": job}` (the job as `getJob` shows it) at '
                "once, then on every change of status or progress (at most 5 a second), then the "
                "terminal job, and the stream ends; a pending job's again whenever its "
                "`queuePosition` changes. Each event's `id:` names the state it shows "
                "(`<status>/<progress in thousandths>`, then `/<n>` while it shows its n-th live "
                "preview, `previewUrl`, or a pending job's position); `: heartbeat` comments keep "
                "it open."
            ),
            # OpenAPI 3.1: an event stream's `schema` describes one event (3.2's `itemSchema`).
            "content": {"text/event-stream": {"schema": JOB_EVENT_SCHEMA}},
        },
        204: {"description": "`Last-Event-ID` names the job's terminal state: nothing to send"},
    },
)
async def stream_job_events(
    job_id: JobId,
    caller: CallerDep,
    reads: JobReadsDep,
    signer: SignerDep,
    request: Request,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            max_length=64,
            description="The `id` of the last event received: resume after it",
        ),
    ] = None,
) -> Response:
    """Extension. The job as a Server-Sent Events stream, for progress bars: it ends after the
    terminal job (or when the server shuts down: reconnect with `Last-Event-ID`)."""
    job = await reads.read(caller.account_id, job_id, ALL_TYPES, wait=False)
    if job is None:
        raise NotFound("Job")
    if is_repeat_of_terminal(job, last_event_id):
        return Response(status_code=204)
    runtime = runtime_of(request)
    stream = JobEventStream(
        reads,
        JobPresenter(signer),
        runtime.services.settings.events_heartbeat_seconds,
        runtime.closing,
    )
    return StreamingResponse(
        stream.events(caller.account_id, job_id, ALL_TYPES, last_event_id),
        media_type="text/event-stream",
        # No proxy buffering or caching in front of a stream.
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/jobs", response_model=JobPage, summary="List image jobs, newest first")
def list_jobs(
    caller: CallerDep,
    db: DatabaseDep,
    reads: JobReadsDep,
    signer: SignerDep,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
    status: JobStatusValue | None = None,
    type: Annotated[
        ListedJobTypeValue | None,
        Query(description="Extension: `video.generate` lists video jobs instead"),
    ] = None,
) -> Any:
    types = (type,) if type else IMAGE_TYPES
    jobs, next_cursor = jobs_service.list_page(db, caller.account_id, types, status, cursor, limit)
    presenter = JobPresenter(signer)
    standings = reads.standings
    return {
        "data": [presenter.job(job, standings.of(job)) for job in jobs],
        "nextCursor": next_cursor,
    }


@router.post("/jobs/{id}/cancel", response_model=JobEnvelope, summary="Cancel an in-flight job")
def cancel_job(job_id: JobId, caller: CallerDep, lifecycle: LifecycleDep, signer: SignerDep) -> Any:
    job = lifecycle.cancel(caller.account_id, job_id)
    if job is None:
        raise NotFound("Job")
    return {"data": JobPresenter(signer).job(job)}


@router.delete(
    "/jobs/{id}",
    status_code=204,
    response_class=Response,
    responses=DELETE_ERROR_RESPONSES,
    operation_id="deleteJob",
    tags=["jobs"],
    summary="Delete a finished job and its stored media (extension)",
)
def delete_job(job_id: JobId, caller: CallerDep, services: ServicesDep) -> Response:
    jobs_service.delete(services, caller.account_id, job_id)
    return Response(status_code=204)
