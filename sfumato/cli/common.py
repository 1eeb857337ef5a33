"""What every command shares: the services of this process, failing with a message, logging."""

from __future__ import annotations

import logging
from typing import NoReturn

import typer

from core.services import Services
from core.settings import Settings


def open_services() -> Services:
    """The services from the environment's settings, the schema migrated and plans written."""
    services = Services.from_settings(Settings())
    services.prepare()
    return services


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
