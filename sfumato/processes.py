"""The processes Sfumato runs, assembled from the gateway, the workers and core: a gateway (with,
in embedded mode, one worker per queue in its own process) and a worker for one queue.

Each imports the side it runs: a gateway replica never loads the workers and their pipelines,
a worker never loads the HTTP framework (python -m benchmarks startup times it)."""

from __future__ import annotations

import logging
import socket
import threading
from typing import TYPE_CHECKING

from core.jobs.contract import QUEUES
from core.jobs.lifecycle import JobLifecycle
from core.served_models import ServedModels
from core.services import Services
from core.styles.semantics import AssetSemantics, SentenceModelLoad
from sfumato.startup import StartupPhases

if TYPE_CHECKING:
    from gateway.runtime import Gateway
    from pipelines.registry import PipelineRegistry
    from workers.runner import JobRunner

log = logging.getLogger(__name__)


class StartRefused(Exception):
    """A process cannot start as asked; the message says why."""


def pipeline_registry(services: Services) -> PipelineRegistry:
    """Which pipeline serves each operation: the diffusion ones the model registry names, the
    builtin ones for the rest (`SFUMATO_PIPELINES` overrides). Raises RegistryError."""
    from models.settings import ModelSettings
    from pipelines.registry import PipelineRegistry

    settings = services.settings
    return PipelineRegistry(
        settings.pipeline_overrides(), ModelSettings(data_dir=settings.data_dir)
    )


def asset_semantics() -> AssetSemantics:
    """The sentence model's functions, as style search and asset links use them (the gateway's
    searches and links, the style workers' brand images): one set per process."""
    from pipelines import styles

    return AssetSemantics(
        describe=styles.describe_image,
        embed=styles.embed_texts,
        rank=styles.rank_by_similarity,
        load=styles.load_embeddings,
        loaded=styles.embeddings_loaded,
    )


def job_runner(services: Services, semantics: AssetSemantics, lifecycle: JobLifecycle) -> JobRunner:
    """What runs jobs in this process (a worker's, or embedded mode's). Raises RegistryError."""
    from workers.runner import JobRunner

    return JobRunner(services, pipeline_registry(services), semantics, lifecycle)


def served_models(services: Services) -> ServedModels:
    """The models creates may pick, from the registry file the workers load. A registry the
    gateway cannot read leaves every create on its operation's default, unsteered (a worker
    refuses to start on it and says why)."""
    from models.registry import RegistryError
    from models.settings import ModelSettings
    from sfumato.served import served_models as read_served_models

    try:
        return read_served_models(ModelSettings(data_dir=services.settings.data_dir))
    except RegistryError as error:
        log.warning("no model can be picked or steered per request: %s", error)
        return ServedModels()


def build_gateway(services: Services, run_workers: bool) -> Gateway:
    """What one gateway process holds; with `run_workers`, the embedded workers too."""
    from core.jobs.creation import JobCreation
    from core.webhooks.deliverer import WebhookDeliverer
    from gateway.jobs.reads import JobReads
    from gateway.limits import RateLimiter
    from gateway.metrics import GatewayMetrics
    from gateway.runtime import Gateway
    from gateway.webhooks.presenter import WebhookPayloads

    settings = services.settings
    lifecycle = JobLifecycle.for_services(services)
    semantics = asset_semantics()
    workers = None
    if run_workers:
        from workers.embedded import EmbeddedWorkers

        runner = job_runner(services, semantics, lifecycle)
        queues = services.config.queues
        workers = EmbeddedWorkers(
            services, runner, {queue: queues.of(queue).concurrency for queue in QUEUES}
        )
    metrics = GatewayMetrics(services.events)
    gateway = Gateway(
        services=services,
        lifecycle=lifecycle,
        creation=JobCreation(services, lifecycle, served_models(services)),
        limiter=RateLimiter.from_settings(settings, services.config.rate_limits),
        metrics=metrics,
        job_reads=JobReads(services.db, services.events, settings.wait_seconds),
        semantics=semantics,
        sentence_model=SentenceModelLoad(semantics),
        embedded_workers=workers,
    )
    payloads = WebhookPayloads(services, lambda: gateway.own_url)
    gateway.deliverer = WebhookDeliverer(services.db, settings, payloads, metrics)
    return gateway


def serve(
    services: Services,
    host: str,
    port: int,
    no_workers: bool,
    log_level: str,
    metrics_port: int = 0,
    phases: StartupPhases | None = None,
) -> None:
    """The HTTP gateway under uvicorn until it stops; in embedded mode with its workers. With
    `metrics_port`, `/metrics` (and the probes) on that port, apart from the public one. With
    `phases`, the start-up's phases are logged once it is ready (listening, its sentence model
    loaded)."""

    from core.health import ProbeServer, ReadinessChecks
    from gateway.app import create_app
    from models.registry import RegistryError
    from sfumato.http_server import GatewayServer, server_config

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
    server = GatewayServer(config, gateway)
    if phases is not None:
        server.on_started = lambda: _log_when_ready(gateway, phases)
    server.run()


def _log_when_ready(gateway: Gateway, phases: StartupPhases) -> None:
    def wait() -> None:
        gateway.sentence_model.wait()
        phases.ready("gateway")

    threading.Thread(target=wait, name="startup-phases", daemon=True).start()


def run_worker(
    services: Services,
    queue: str,
    concurrency: int | None,
    metrics_port: int,
    log_level: str,
    phases: StartupPhases | None = None,
) -> None:
    """A Celery worker for one queue (distributed mode) until it stops; SIGTERM finishes the
    running jobs within the queue's grace period, then hands back what still runs."""
    from celery.signals import worker_ready, worker_shutting_down

    from core.broker import broker_queue
    from core.health import ProbeServer, ReadinessChecks
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
        runner = job_runner(services, asset_semantics(), lifecycle)
        runner.warm_up([queue])
    except (ModelUnavailable, RegistryError) as error:
        raise StartRefused(f"the {queue} worker cannot load its models: {error}") from None
    GracefulShutdown(lifecycle, runner.in_flight, pool.shutdown_grace_seconds).install()
    consuming = threading.Event()
    worker_ready.connect(lambda **_: consuming.set(), weak=False)
    if phases is not None:
        worker_ready.connect(lambda **_: phases.ready(f"{queue} worker"), weak=False)
    worker_shutting_down.connect(lambda **_: consuming.clear(), weak=False)
    if metrics_port:
        metrics.install_collectors(settings.broker_url, settings.namespace)

        def consumer_up() -> None:
            if not consuming.is_set():
                raise RuntimeError("not consuming (starting or shutting down)")

        probes = ProbeServer(metrics_port, ReadinessChecks(services), consumer_up)
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
