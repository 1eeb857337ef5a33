"""`sfumato style extract | search`: brand styles on a server (see remote.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from sfumato.cli.common import JsonOption, print_json
from sfumato.cli.remote import (
    EXIT_JOB_FAILED,
    ApiKeyOption,
    ApiUrlOption,
    connected,
    follow,
    wire,
)

style_app = typer.Typer(help="Brand styles on a server: extract, search.", no_args_is_help=True)


@style_app.command()
def extract(
    url: str,
    as_new: Annotated[
        bool,
        typer.Option(
            "--as-new",
            help="Save a second style even where you have one of this site (by default that "
            "style is updated).",
        ),
    ] = False,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Extract a brand style from a website; prints the saved style's id and name (extracting
    a site again updates its style)."""
    from sfumato_client.models import SolidColour

    with connected(api_url, api_key) as client:
        job = follow(client, client.styles.extract(url, as_new=as_new or None), as_json=as_json)
        if job.result is None or job.result.style is None:
            raise typer.Exit(EXIT_JOB_FAILED)
        style = client.styles.get(job.result.style.id)
        if as_json:
            print_json(wire(style))
            return
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
    as_json: JsonOption = False,
) -> None:
    """Semantic search over a style's linked assets, best first."""
    with connected(api_url, api_key) as client:
        hits = client.styles.search(style_id, query, limit=limit)
        if as_json:
            print_json([wire(hit) for hit in hits])
            return
        for hit in hits:
            typer.echo(f"{hit.similarity:.3f}  {hit.id}  {hit.name}  {hit.url}")
