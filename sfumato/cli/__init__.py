"""`sfumato`: serve, run a worker, migrate, and manage accounts, keys and models.

One module per command group: server.py (serve, worker, migrate, demo), accounts.py, keys.py,
models.py (the diffusion model registry); the commands that call a server through the Python
client: generation.py (generate, edit, reframe, upscale, animate, transition), jobs.py,
styles.py (style extract, search), sharing remote.py. Each command imports the service's
modules when it runs (sfumato/cli/common.py says why).
"""

from __future__ import annotations

from typing import Annotated

# First: the start-up phases count from here.
from sfumato import startup  # noqa: F401  # isort: skip

import typer

from sfumato.cli import generation, server
from sfumato.cli.accounts import accounts_app
from sfumato.cli.help import PlainHelpGroup
from sfumato.cli.jobs import jobs_app
from sfumato.cli.keys import keys_app
from sfumato.cli.models import models_app
from sfumato.cli.styles import style_app

app = typer.Typer(
    help="Sfumato: self-hostable image and video generation.",
    no_args_is_help=True,
    cls=PlainHelpGroup,
    rich_markup_mode=None,
)
app.add_typer(accounts_app, name="accounts")
app.add_typer(keys_app, name="keys")
app.add_typer(models_app, name="models")
app.add_typer(jobs_app, name="jobs")
app.add_typer(style_app, name="style")
for command in (server.migrate, server.serve, server.worker, server.demo):
    app.command()(command)
for generation_command in generation.COMMANDS:
    app.command()(generation_command)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

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
