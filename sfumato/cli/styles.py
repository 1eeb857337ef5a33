"""`sfumato style extract | search`: brand styles on a server (see remote.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from sfumato.cli.remote import EXIT_JOB_FAILED, ApiKeyOption, ApiUrlOption, connected, follow

style_app = typer.Typer(help="Brand styles on a server: extract, search.", no_args_is_help=True)


@style_app.command()
def extract(url: str, api_url: ApiUrlOption = None, api_key: ApiKeyOption = None) -> None:
    """Extract a brand style from a website; prints the new style's id and name."""
    from sfumato_client.models import SolidColour

    with connected(api_url, api_key) as client:
        job = follow(client, client.styles.extract(url))
        if job.result is None or job.result.style is None:
            raise typer.Exit(EXIT_JOB_FAILED)
        style = client.styles.get(job.result.style.id)
        typer.echo(f"style {style.id} {style.name}")
        palette = [colour.hex for colour in style.colours if isinstance(colour, SolidColour)]
        typer.echo("palette " + " ".join(palette))


@style_app.command()
def search(
    style_id: str,
    query: str,
    limit: Annotated[int | None, typer.Option(help="How many hits (server default 10).")] = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Semantic search over a style's linked assets, best first."""
    with connected(api_url, api_key) as client:
        for hit in client.styles.search(style_id, query, limit=limit):
            typer.echo(f"{hit.similarity:.3f}  {hit.id}  {hit.name}  {hit.url}")
