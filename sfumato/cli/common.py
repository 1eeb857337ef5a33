"""What every command shares: the services of this process, failing with a message, logging.

Commands import the service's modules when they run, never at the top of a command module: the
CLI starts (`--help`, `--version`) without loading the database, the broker or the pipelines
(tests/client/test_cli_start.py holds it to that).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from core.services import Services


def services_from_environment() -> Services:
    """The services the environment's settings describe, not yet prepared; a signing secret
    that must not be used stops the command with its reason."""
    from core.services import Services
    from core.settings import InsecureSecret, Settings

    try:
        return Services.from_settings(Settings())
    except InsecureSecret as refused:
        fail(str(refused))


def open_services() -> Services:
    """The services from the environment's settings, the schema migrated and plans written."""
    services = services_from_environment()
    services.prepare()
    return services


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
