"""`sfumato`: serve, run a worker, migrate, and manage accounts and keys."""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path
from typing import Annotated

import typer

from core.accounts import service as accounts
from core.services import Services
from core.settings import Settings
from gateway.models_cli import models_app
from workers.queues import QUEUES, broker_queue

app = typer.Typer(help="Sfumato: self-hostable image and video generation.", no_args_is_help=True)
accounts_app = typer.Typer(help="Accounts and credits.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True)
app.add_typer(accounts_app, name="accounts")
app.add_typer(keys_app, name="keys")
app.add_typer(models_app, name="models")

DEMO_EMAIL = "demo@sfumato.local"
DEMO_KEY_FILE = "demo-api-key"


def _services(migrate: bool = True) -> Services:
    services = Services.from_settings(Settings())
    if migrate:
        services.prepare()
    return services


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


@app.command()
def migrate() -> None:
    """Apply the database migrations (serve and worker do this at start too)."""
    _services()
    typer.echo("database is up to date")


@app.command()
def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="Only the gateway; workers run elsewhere.")
    ] = False,
    log_level: str = "info",
) -> None:
    """Run the HTTP gateway; in embedded mode also one worker per queue in this process."""
    import uvicorn

    from gateway.app import build_gateway, create_app
    from models.registry import RegistryError

    _logging(log_level)
    services = _services()
    embedded = services.settings.embedded_broker
    if no_workers and embedded:
        _fail("--no-workers needs a shared broker (SFUMATO_BROKER_URL=redis://...)")
    if not embedded and not no_workers:
        # Celery workers sharing uvicorn's process misbehave on Redis: they run on their own.
        logging.getLogger(__name__).info(
            "distributed mode: jobs run in `sfumato worker --queue image|video|style` processes"
        )
    try:
        gateway = build_gateway(services, run_workers=embedded and not no_workers)
    except RegistryError as error:
        _fail(f"the workers cannot start: {error}")
        return
    config = uvicorn.Config(
        create_app(gateway),
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=10,
        access_log=False,
    )
    uvicorn.Server(config).run()


@app.command()
def worker(
    queue: Annotated[str, typer.Option(help="image, video or style")],
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Jobs at once (default: the queue's configuration)")
    ] = None,
    metrics_port: Annotated[
        int, typer.Option(help="Port of /metrics, /healthz and /readyz (0: none)")
    ] = 0,
    log_level: str = "info",
) -> None:
    """A Celery worker for one queue (distributed mode); SIGTERM finishes the running jobs
    within the queue's grace period, then hands back what still runs."""
    from celery.signals import worker_ready, worker_shutting_down

    from core.health import ReadinessChecks
    from models.loading import ModelUnavailable
    from models.registry import RegistryError
    from models.settings import ModelSettings
    from pipelines.registry import PipelineRegistry
    from workers import metrics
    from workers.celery_app import make_celery
    from workers.dispatch import Dispatcher
    from workers.runner import JobRunner
    from workers.shutdown import GracefulShutdown

    if queue not in QUEUES:
        _fail(f"unknown queue {queue!r} (one of {', '.join(QUEUES)})")
    _logging(log_level)
    services = _services()
    settings = services.settings
    if settings.embedded_broker:
        _fail("a separate worker needs a shared broker (SFUMATO_BROKER_URL=redis://...)")
    pool = services.config.queues.of(queue)
    dispatcher = Dispatcher(services, make_celery(settings))
    try:
        pipelines = PipelineRegistry(
            settings.pipeline_overrides(), ModelSettings(data_dir=settings.data_dir)
        )
        runner = JobRunner(services, pipelines, dispatcher)
        runner.warm_up([queue])
    except (ModelUnavailable, RegistryError) as error:
        _fail(f"the {queue} worker cannot load its models: {error}")
    GracefulShutdown(services, dispatcher, runner.in_flight, pool.shutdown_grace_seconds).install()
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
        logging.getLogger(__name__).info("probes and metrics on port %d", probes.port)
    celery = make_celery(settings, runner, pool)
    celery.set_default()
    celery.Worker(
        queues=[broker_queue(settings.namespace, queue)],
        concurrency=concurrency or pool.concurrency,
        pool_cls="workers.pool:AppThreadPool",
        hostname=f"{queue}@{socket.gethostname()}",
        without_mingle=True,
        without_gossip=True,
        loglevel=log_level.upper(),
    ).start()


@app.command()
def demo(
    base_url: Annotated[
        str, typer.Option(help="where the service will answer, for the printed example")
    ] = "http://127.0.0.1:8000",
) -> None:
    """Make sure a demo account and key exist and print the key (used by `make run`)."""
    services = _services()
    key_file = services.settings.ensure_data_dir() / DEMO_KEY_FILE
    key = key_file.read_text().strip() if key_file.exists() else ""
    if not key or accounts.authenticate(services.db, key) is None:
        try:
            accounts.find_account(services.db, DEMO_EMAIL)
        except accounts.AccountError:
            accounts.create_account(services.db, DEMO_EMAIL, "pro", 1000)
        key = accounts.create_key(services.db, DEMO_EMAIL, "demo", None).plaintext
        key_file.write_text(key + "\n")
        key_file.chmod(0o600)
    typer.echo(f"Demo API key ({DEMO_EMAIL}, kept in {key_file}):\n\n  {key}\n")
    typer.echo(_models_greeting(services.settings.data_dir) + "\n")
    typer.echo("Try:\n")
    typer.echo(
        f"  curl -s -X POST {base_url.rstrip('/')}/v1/images/generate \\\n"
        f"    -H 'x-api-key: {key}' -H 'content-type: application/json' \\\n"
        '    -d \'{"prompt": "a calm blue sea at dawn"}\'\n'
    )


def _models_greeting(data_dir: Path) -> str:
    """What serves generate: the pulled model, or how to get a real one on this machine."""
    from models.install import installed
    from models.presets import BY_NAME, CPU_PRESET
    from models.registry import RegistryError
    from models.settings import ModelSettings

    settings = ModelSettings(data_dir=data_dir)
    try:
        entries = {entry.operation: entry for entry in installed(settings)}
    except RegistryError as error:
        return f"The model registry is invalid, so workers will not start: {error}"
    if "generate" in entries:
        served = ", ".join(f"{op} by {entry.model}" for op, entry in sorted(entries.items()))
        return f"Models: {served} (the builtin pipelines serve the rest; sfumato models list)."
    preset = BY_NAME[CPU_PRESET]
    return (
        "generate runs the builtin procedural painter. For real text-to-image on this CPU "
        f"(a few seconds a picture), pull {preset.repo} once ({preset.download_gb:g} GB) and "
        f"restart:\n\n  .venv/bin/sfumato models pull {CPU_PRESET} --dir {settings.directory}"
    )


@accounts_app.command("create")
def accounts_create(
    email: str,
    plan: Annotated[str, typer.Option(help="free, pro, enterprise or another")] = "free",
    credits: Annotated[int, typer.Option(min=0)] = 0,
) -> None:
    """Create an account."""
    try:
        account = accounts.create_account(_services().db, email, plan, credits)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    typer.echo(f"{account.id}  {account.email}  plan={account.plan_id}  credits={credits}")


@accounts_app.command("list")
def accounts_list() -> None:
    """List accounts."""
    for account in accounts.list_accounts(_services().db):
        typer.echo(
            f"{account.id}  {account.email}  plan={account.plan_id}  "
            f"credits={account.credit_balance}"
        )


@accounts_app.command("show")
def accounts_show(email: str) -> None:
    """The account, its balance and every ledger movement (the audit trail)."""
    try:
        statement = accounts.statement(_services().db, email)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    account = statement.account
    typer.echo(f"{account.id}  {account.email}  plan={account.plan_id}")
    typer.echo(f"balance {account.credit_balance}  (ledger total {statement.ledger_total})")
    for entry in statement.entries:
        job = f"job={entry.job_id}" if entry.job_id else ""
        reason = entry.reason or ""
        typer.echo(
            f"  {entry.created_at.isoformat()}  {entry.kind:<7} {entry.amount:>+7}  "
            f"-> {entry.balance_after:<7} {job} {reason}".rstrip()
        )
    if not statement.consistent:
        _fail("the balance does not match the ledger")


@accounts_app.command("credit")
def accounts_credit(
    email: str,
    amount: Annotated[int, typer.Argument(min=1)],
    reason: Annotated[str, typer.Option(help="Why, for the ledger")],
) -> None:
    """Grant credits (a ledger row with the reason)."""
    try:
        account = accounts.grant_credits(_services().db, email, amount, reason)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    typer.echo(f"{account.email}  credits={account.credit_balance}")


@accounts_app.command("set-plan")
def accounts_set_plan(email: str, plan: str) -> None:
    """Move an account to another plan."""
    try:
        account = accounts.set_plan(_services().db, email, plan)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    typer.echo(f"{account.email}  plan={account.plan_id}")


@keys_app.command("create")
def keys_create(
    email: str,
    name: Annotated[str, typer.Option(help="What the key is for")],
    expires_in: Annotated[
        int | None, typer.Option("--expires-in", help="Days until the key expires")
    ] = None,
) -> None:
    """Create a key; its plaintext is the last line printed, and is never shown again."""
    try:
        new = accounts.create_key(_services().db, email, name, expires_in)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    expiry = new.key.expires_at.isoformat() if new.key.expires_at else "never"
    typer.echo(f"key id {new.key.id} ({new.key.name}), expires {expiry}")
    typer.echo(new.plaintext)


@keys_app.command("list")
def keys_list(email: str) -> None:
    """List an account's keys (never their secrets)."""
    try:
        keys = accounts.list_keys(_services().db, email)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    for key in keys:
        expiry = key.expires_at.isoformat() if key.expires_at else "never"
        used = key.last_used_at.isoformat() if key.last_used_at else "never"
        typer.echo(
            f"{key.id}  {key.prefix}...  {key.name}  {key.state}  expires={expiry}  used={used}"
        )


def _set_state(key_id: str, state: str) -> None:
    try:
        key = accounts.set_key_state(_services().db, key_id, state)
    except accounts.AccountError as error:
        _fail(str(error))
        return
    typer.echo(f"{key.id}  {key.state}")


@keys_app.command("deactivate")
def keys_deactivate(key_id: str) -> None:
    """Refuse the key from the next request on (it can be activated again)."""
    _set_state(key_id, "deactivated")


@keys_app.command("activate")
def keys_activate(key_id: str) -> None:
    """Accept a deactivated key again."""
    _set_state(key_id, "active")


@keys_app.command("revoke")
def keys_revoke(key_id: str) -> None:
    """Refuse the key for good."""
    _set_state(key_id, "revoked")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
