"""The application factory: routers under `/v1`, middleware, errors and the lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
from fastapi import Depends, FastAPI
from starlette.middleware.cors import CORSMiddleware
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from core.accounts.callers import CallerCache
from core.health import ReadinessChecks
from core.jobs import service as jobs_service
from core.jobs.sweep import JobSweep
from core.services import Services
from core.sessions import service as sessions_service
from core.uploads import service as uploads_service
from gateway import files, health
from gateway.account.router import router as account_router
from gateway.bodies import BodyLimits, RequestBodyMiddleware
from gateway.dashboard.router import install_dashboard
from gateway.dependencies import single_query_values
from gateway.docs import install_docs
from gateway.errors import install_error_handlers
from gateway.images.router import router as images_router
from gateway.jobs.router import install_job_reads
from gateway.jobs.router import router as jobs_router
from gateway.limits import RateLimitMiddleware
from gateway.metrics import MetricsMiddleware
from gateway.middleware import AuthMiddleware
from gateway.models.router import router as models_router
from gateway.nul import NulCharacterMiddleware
from gateway.openapi import install_openapi, operation_id
from gateway.runtime import Gateway
from gateway.styles.router import router as styles_router
from gateway.uploads.router import router as uploads_router
from gateway.videos.router import router as videos_router
from gateway.webhooks.router import router as webhooks_router

log = logging.getLogger(__name__)
CORS_METHODS = ["GET", "POST", "DELETE"]
CORS_REQUEST_HEADERS = ["x-api-key", "authorization", "content-type", "idempotency-key"]
CORS_EXPOSED_HEADERS = [
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Retry-After",
    "Idempotent-Replayed",
]


def _maintain(sweep: JobSweep, services: Services) -> None:
    """One pass of the periodic housekeeping: publish what needs publishing, drop old
    idempotency keys, expired dashboard sessions and the staged bytes of abandoned uploads and of
    completed ones."""
    sweep.run()
    jobs_service.purge_idempotency_records(services.db)
    sessions_service.purge_expired(services.db)
    uploads_service.purge_abandoned(services)
    uploads_service.purge_completed_staging(services)


async def _maintain_forever(sweep: JobSweep, services: Services) -> None:
    interval = services.settings.sweep_interval_seconds
    while True:
        await asyncio.sleep(interval)
        try:
            await anyio.to_thread.run_sync(_maintain, sweep, services)
        except Exception:
            log.exception("housekeeping failed; next pass in %.0fs", interval)


def create_app(gateway: Gateway) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        services = gateway.services
        gateway.sentence_model.start()
        sweep = JobSweep(gateway.lifecycle)
        await services.events.start()
        workers = gateway.embedded_workers
        if workers is not None:
            if services.settings.embedded_broker:
                recovered = await anyio.to_thread.run_sync(sweep.recover_after_restart)
                if recovered:
                    log.info("republished %d jobs left in flight by the last run", recovered)
            await anyio.to_thread.run_sync(workers.start)
        await anyio.to_thread.run_sync(sweep.run)
        sweeper = asyncio.create_task(_maintain_forever(sweep, services), name="housekeeping")
        deliverer = gateway.deliverer
        if deliverer is not None:
            deliverer.start()
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            if deliverer is not None:
                await anyio.to_thread.run_sync(deliverer.stop)
            if workers is not None:
                await anyio.to_thread.run_sync(workers.stop)
            await gateway.services.events.stop()
            await gateway.services.db.driver_reads.close()

    app = FastAPI(
        title="Sfumato",
        version="v1",
        openapi_url="/v1/openapi.json",
        # Served by gateway/docs.py from the package's own assets (no CDN).
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        # `/v1/images/generate/` is a 404 in the envelope, not a bare 307 to the Host header.
        redirect_slashes=False,
        generate_unique_id_function=operation_id,
        # No OpenTelemetry here (metrics are Prometheus'): FastAPI's own would look up the
        # global providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.gateway = gateway
    install_job_reads(app, "/v1", dependencies=[Depends(single_query_values)])
    for router in (
        images_router,
        videos_router,
        jobs_router,
        styles_router,
        uploads_router,
        account_router,
        models_router,
        webhooks_router,
    ):
        app.include_router(router, prefix="/v1", dependencies=[Depends(single_query_values)])
    app.include_router(files.router)
    app.include_router(health.router)
    install_dashboard(app)
    app.state.readiness = ReadinessChecks(gateway.services)
    app.state.readiness_extra = {"sentenceModel": gateway.sentence_model.check}
    install_error_handlers(app)
    install_openapi(app)
    install_docs(app, "/v1/openapi.json")
    # Outermost last: metrics, CORS, the key, the rate limit, then the body (bounded; never read
    # for a request already refused), then the NUL check of what was read.
    app.add_middleware(NulCharacterMiddleware)
    app.add_middleware(
        RequestBodyMiddleware, limits=BodyLimits.from_settings(gateway.services.settings)
    )
    app.add_middleware(RateLimitMiddleware, limiter=gateway.limiter)
    callers = CallerCache(gateway.services.events)
    app.add_middleware(AuthMiddleware, db=gateway.services.db, callers=callers)
    origins = gateway.services.settings.cors_origin_list
    if origins:
        # Outside authentication: a browser's preflight carries no key and is answered here.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=CORS_METHODS,
            allow_headers=CORS_REQUEST_HEADERS,
            expose_headers=CORS_EXPOSED_HEADERS,
            max_age=600,
        )
    app.add_middleware(MetricsMiddleware, metrics=gateway.metrics)
    # Outermost: the client's address and scheme, once, for everything after (sign-in limits,
    # cookies, URLs, logs). Only a configured proxy's X-Forwarded-* count (the servers that run
    # this app turn their own proxy handling off: sfumato/http_server.py).
    proxies = gateway.services.settings.trusted_proxy_list
    if proxies:
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=proxies)
    return app
