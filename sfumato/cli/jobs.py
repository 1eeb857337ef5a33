"""`sfumato jobs list | show | cancel`: the jobs on a server (see remote.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from sfumato.cli.common import JsonOption, print_json
from sfumato.cli.remote import (
    ApiKeyOption,
    ApiUrlOption,
    choice,
    connected,
    follow,
    standing,
    wire,
)

if TYPE_CHECKING:
    from sfumato_client import JobData

jobs_app = typer.Typer(help="Jobs on a server: list, show, cancel.", no_args_is_help=True)


def describe(job: JobData) -> str:
    """One job in one line: id, type, status, progress, creation time, where it stands if in
    flight (its queue position and estimated start, or its estimated end), then its outputs or
    its error, and its notes."""
    progress = "" if job.progress is None else f" {job.progress:.0%}"
    line = f"{job.id}  {job.type:<14} {job.status:<10}{progress}  {job.created_at}"
    where = standing(job)
    if where:
        line += f"  {where}"
    if job.error is not None:
        line += f"  {job.error.code}: {job.error.message}"
    if job.result is not None:
        urls = [image.url for image in job.result.images or []]
        if job.result.video is not None:
            urls.append(job.result.video.url)
        if job.result.style is not None:
            urls.append(f"style {job.result.style.id}")
        line += "".join(f"\n    {url}" for url in urls)
    line += "".join(f"\n    note: {note}" for note in job.notes or [])
    return line


@jobs_app.command("list")
def list_jobs(
    status: Annotated[
        str | None,
        typer.Option(help="Only jobs in this status.", callback=choice("JobStatus", "--status")),
    ] = None,
    video: Annotated[
        bool, typer.Option("--video", help="Video jobs instead of image jobs.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 20,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The newest image jobs (or video jobs)."""
    with connected(api_url, api_key) as client:
        kind = "video.generate" if video else None
        jobs = list(client.jobs.list(status=status, type=kind, limit=limit))
        if as_json:
            print_json([wire(job) for job in jobs])
            return
        for job in jobs:
            typer.echo(describe(job))


@jobs_app.command()
def show(
    job_id: str,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow it with a progress bar to its end.")
    ] = False,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """One job; with --wait, followed until it is terminal (exit 1 when it failed)."""
    with connected(api_url, api_key) as client:
        job = client.jobs.get(job_id)
        if wait and not job.is_terminal:
            job = follow(client, job, as_json=as_json)
        if as_json:
            print_json(wire(job))
        else:
            typer.echo(describe(job))
        if job.status == "failed" and wait:
            raise typer.Exit(1)


@jobs_app.command()
def cancel(
    job_id: str,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel an in-flight job (a terminal one is left as it is)."""
    with connected(api_url, api_key) as client:
        job = client.jobs.cancel(job_id)
        if as_json:
            print_json(wire(job))
        else:
            typer.echo(describe(job))
