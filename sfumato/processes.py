"""The processes Sfumato runs, assembled from the gateway, the workers and core: a gateway (with,
in embedded mode, one worker per queue in its own process) and a worker for one queue."""

from __future__ import annotations

import logging
import socket
import threading

from core.broker import broker_queue
from core.jobs.contract import QUEUES
from core.jobs.creation import JobCreation
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from gateway.jobs.reads import JobReads
from gateway.limits import RateLimiter
from gateway.metrics import GatewayMetrics
from gateway.runtime import Gateway
from models.settings import ModelSettings
from pipelines.registry import PipelineRegistry
from workers.embedded import EmbeddedWorkers
from workers.runner import JobRunner

log = logging.getLogger(__name__)


class StartRefused(Exception):
    """A process cannot start as asked; the message says why."""


def pipeline_registry(services: Services) -> PipelineRegistry:
    """Which pipeline serves each operation: the diffusion ones the model registry names, the
    builtin ones for the rest (`SFUMATO_PIPELINES` overrides). Raises RegistryError."""
    settings = services.settings
    return PipelineRegistry(
        settings.pipeline_overrides(), ModelSettings(data_dir=settings.data_dir)
    )


def build_gateway(services: Services, run_workers: bool) -> Gateway:
    """What one gateway process holds; with `run_workers`, the embedded workers too."""
    settings = services.settings
    lifecycle = JobLifecycle.for_services(services)
    workers = None
    if run_workers:
        runner = JobRunner(services, pipeline_registry(services), lifecycle)
        queues = services.config.queues
        workers = EmbeddedWorkers(
            services, runner, {queue: queues.of(queue).concurrency for queue in QUEUES}
        )
    return Gateway(
        services=services,
        lifecycle=lifecycle,
        creation=JobCreation(services, lifecycle),
        limiter=RateLimiter.from_settings(settings, services.config.rate_limits),
        metrics=GatewayMetrics(services.events),
        job_reads=JobReads(services.db, services.events, settings.wait_seconds),
        embedded_workers=workers,
    )


def serve(
    services: Services,
    host: str,
    port: int,
    no_workers: bool,
    log_level: str,
    metrics_port: int = 0,
) -> None:
    """The HTTP gateway under uvicorn until it stops; in embedded mode with its workers. With
    `metrics_port`, `/metrics` (and the probes) on that port, apart from the public one."""

    from core.health import ReadinessChecks
    from gateway.app import create_app
    from models.registry import RegistryError
    from sfumato.http_server import GatewayServer, server_config
    from workers.metrics import ProbeServer

    embedded = services.settings.embedded_broker
    if no_workers and embedded:
        raise StartRefused("--no-workers needs a shared broker (SFUMATO_BROKER_URL=redis://...)")
    if not embedded and not no_workers:
        # Celery workers sharing uvicorn's process misbehave on Redis: they run on their own.
        log.info(
            "distributed mode: jobs run in `sfumato worker --queue image|video|style` processes"
        )
    try:
        gateway = build_gateway(services, run_workers=embedded and not no_workers)
    except RegistryError as error:
        raise StartRefused(f"the workers cannot start: {error}") from None
    config = server_config(create_app(gateway), host, port, services.settings, log_level)
    if metrics_port:
        probes = ProbeServer(
            metrics_port, ReadinessChecks(services), exposition=gateway.metrics.exposition
        )
        probes.start()
        log.info("probes and metrics on port %d", probes.port)
    GatewayServer(config, gateway).run()


def run_worker(
    services: Services, queue: str, concurrency: int | None, metrics_port: int, log_level: str
) -> None:
    """A Celery worker for one queue (distributed mode) until it stops; SIGTERM finishes the
    running jobs within the queue's grace period, then hands back what still runs."""
    from celery.signals import worker_ready, worker_shutting_down

    from core.health import ReadinessChecks
    from models.loading import ModelUnavailable
    from models.registry import RegistryError
    from workers import metrics
    from workers.celery_app import worker_celery
    from workers.shutdown import GracefulShutdown

    if queue not in QUEUES:
        raise StartRefused(f"unknown queue {queue!r} (one of {', '.join(QUEUES)})")
    settings = services.settings
    if settings.embedded_broker:
        raise StartRefused(
            "a separate worker needs a shared broker (SFUMATO_BROKER_URL=redis://...)"
        )
    pool = services.config.queues.of(queue)
    lifecycle = JobLifecycle.for_services(services)
    try:
        runner = JobRunner(services, pipeline_registry(services), lifecycle)
        runner.warm_up([queue])
    except (ModelUnavailable, RegistryError) as error:
        raise StartRefused(f"the {queue} worker cannot load its models: {error}") from None
    GracefulShutdown(lifecycle, runner.in_flight, pool.shutdown_grace_seconds).install()
    consuming = threading.Event()
    worker_ready.connect(lambda **_: consuming.set(), weak=False)
    worker_shutting_down.connect(lambda **_: consuming.clear(), weak=False)
    if metrics_port:
        metrics.install_collectors(settings.broker_url, settings.namespace)

        def consumer_up() -> None:
            if not consuming.is_set():
                raise RuntimeError("not consuming (starting or shutting down)")

        probes = metrics.ProbeServer(metrics_port, ReadinessChecks(services), consumer_up)
        probes.start()
        log.info("probes and metrics on port %d", probes.port)
    celery = worker_celery(settings, runner, pool)
    celery.set_default()
    try:
        celery.Worker(
            queues=[broker_queue(settings.namespace, queue)],
            concurrency=concurrency or pool.concurrency,
            pool_cls="workers.pool:AppThreadPool",
            hostname=f"{queue}@{socket.gethostname()}",
            without_mingle=True,
            without_gossip=True,
            loglevel=log_level.upper(),
        ).start()
    finally:
        runner.close()
