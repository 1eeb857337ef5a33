"""The server commands: serve, worker, migrate, and the demo account of `make run`."""

from __future__ import annotations

import secrets
from typing import Annotated

import typer

from sfumato.cli.common import (
    JsonOption,
    configure_logging,
    fail,
    open_services,
    print_json,
    services_from_environment,
)
from sfumato.cli.models import models_greeting
from sfumato.startup import StartupPhases

DEMO_EMAIL = "demo@sfumato.local"
DEMO_KEY_FILE = "demo-api-key"
DEMO_PASSWORD_FILE = "demo-dashboard-password"


def migrate(as_json: JsonOption = False) -> None:
    """Apply the database migrations (serve and worker do this at start too)."""
    services = services_from_environment()
    before = services.db.revision()
    services.prepare()
    if as_json:
        after = services.db.revision()
        print_json({"revision": after, "previousRevision": before, "migrated": after != before})
        return
    typer.echo("database is up to date")


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="Only the gateway; workers run elsewhere.")
    ] = False,
    metrics_port: Annotated[
        int,
        typer.Option(help="Port of /metrics, /healthz and /readyz, off the public one (0: none)"),
    ] = 0,
    log_level: str = "info",
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log",
            help="Log every request: request id, method, route, status, duration (never a key "
            "or a password). SFUMATO_LOG_FORMAT=json writes it as JSON.",
        ),
    ] = False,
) -> None:
    """Run the HTTP gateway; in embedded mode also one worker per queue in this process."""
    # Imported here: the processes load the workers and the model loader, which switches the
    # Hugging Face client offline for the whole process; `sfumato models pull` must not.
    from sfumato import processes

    phases = StartupPhases()
    services = services_from_environment()
    configure_logging(log_level, services.settings.log_format, access_log)
    phases.end("imports")
    services.prepare()
    phases.end("migrations")
    try:
        processes.serve(services, host, port, no_workers, log_level, metrics_port, phases)
    except processes.StartRefused as refused:
        fail(str(refused))


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
    from sfumato import processes

    phases = StartupPhases()
    services = services_from_environment()
    configure_logging(log_level, services.settings.log_format)
    phases.end("imports")
    services.prepare()
    phases.end("migrations")
    try:
        processes.run_worker(services, queue, concurrency, metrics_port, log_level, phases)
    except processes.StartRefused as refused:
        fail(str(refused))


def demo(
    base_url: Annotated[
        str, typer.Option(help="where the service will answer, for the printed example")
    ] = "http://127.0.0.1:8000",
    as_json: JsonOption = False,
) -> None:
    """Make sure a demo account, key and dashboard password exist and print them (used by
    `make run`)."""
    from core.accounts import api_keys, authentication, passwords
    from core.accounts import service as accounts

    services = open_services()
    key_file = services.settings.ensure_data_dir() / DEMO_KEY_FILE
    key = key_file.read_text().strip() if key_file.exists() else ""
    if not key or authentication.authenticate(services.db, key) is None:
        try:
            accounts.find_account(services.db, DEMO_EMAIL)
        except accounts.AccountError:
            accounts.create_account(services.db, DEMO_EMAIL, "pro", 1000)
        key = api_keys.create_key(services.db, DEMO_EMAIL, "demo", None).plaintext
        key_file.write_text(key + "\n")
        key_file.chmod(0o600)
    password_file = key_file.with_name(DEMO_PASSWORD_FILE)
    password = password_file.read_text().strip() if password_file.exists() else ""
    if not password or passwords.check_password(services.db, DEMO_EMAIL, password) is None:
        password = secrets.token_urlsafe(12)
        passwords.set_password(services.db, DEMO_EMAIL, password)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    base_url = base_url.rstrip("/")
    if as_json:
        print_json(
            {
                "email": DEMO_EMAIL,
                "key": key,
                "keyFile": str(key_file),
                "password": password,
                "passwordFile": str(password_file),
                "baseUrl": base_url,
                "apiUrl": f"{base_url}/v1",
                "dashboardUrl": f"{base_url}/dashboard",
            }
        )
        return
    typer.echo(f"Demo API key ({DEMO_EMAIL}, kept in {key_file}):\n\n  {key}\n")
    typer.echo(
        f"Dashboard: {base_url}/dashboard\n"
        f"  email {DEMO_EMAIL}, password {password} (kept in {password_file})\n"
    )
    typer.echo(models_greeting(services.settings.data_dir) + "\n")
    typer.echo("Try:\n")
    typer.echo(
        f"  curl -s -X POST {base_url}/v1/images/generate \\\n"
        f"    -H 'x-api-key: {key}' -H 'content-type: application/json' \\\n"
        '    -d \'{"prompt": "a calm blue sea at dawn"}\'\n'
    )
