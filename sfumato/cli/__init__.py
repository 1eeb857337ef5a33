"""`sfumato`: serve, run a worker, migrate, and manage accounts, keys and models.

One module per command group: server.py (serve, worker, migrate, demo), accounts.py, keys.py,
models.py (the diffusion model registry).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated

import typer

from sfumato.cli import server
from sfumato.cli.accounts import accounts_app
from sfumato.cli.keys import keys_app
from sfumato.cli.models import models_app

app = typer.Typer(help="Sfumato: self-hostable image and video generation.", no_args_is_help=True)
app.add_typer(accounts_app, name="accounts")
app.add_typer(keys_app, name="keys")
app.add_typer(models_app, name="models")
for command in (server.migrate, server.serve, server.worker, server.demo):
    app.command()(command)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"sfumato {version('sfumato')}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Options before any command."""


def main() -> None:
    app()
