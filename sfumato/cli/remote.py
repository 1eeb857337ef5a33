"""What the commands that talk to a Sfumato server share (through `sfumato_client`): the
server and key options, exit codes, a progress bar per job, Ctrl-C, downloads.

Exit codes: 0 done; 1 the job failed; 2 a usage error (click's own, or a value the CLI checks
itself); 3 an API error, as one line with its code and message; 130 interrupted by Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, get_args

import typer

from sfumato.cli.common import print_json

if TYPE_CHECKING:
    from rich.console import Console

    from sfumato_client import APIError, Client, Job, JobData

EXIT_JOB_FAILED = 1
EXIT_USAGE = 2
EXIT_API_ERROR = 3
EXIT_INTERRUPTED = 130

ApiUrlOption = Annotated[
    str | None,
    typer.Option(
        "--api-url",
        envvar="SFUMATO_API_URL",
        help="The server's API base URL, ending in /v1.",
        show_default=False,
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option("--api-key", envvar="SFUMATO_API_KEY", help="The API key.", show_default=False),
]
OutputOption = Annotated[
    Path,
    typer.Option(
        "-o",
        "--output",
        help="A file, or a directory for the outputs (named by their ids).",
    ),
]
PreviewOption = Annotated[
    Path | None,
    typer.Option(
        "--preview",
        help="Write the live preview (a small JPEG of the picture as it forms) to this file "
        "each time it changes.",
    ),
]


def wire(model: Any) -> Any:
    """A client model as the API wrote it (camelCase)."""
    return model.model_dump(mode="json", by_alias=True)


@cache
def err() -> Console:
    """Standard error, for what is not the command's result (progress, errors, hints)."""
    from rich.console import Console

    return Console(stderr=True)


def choice(values: str, option: str) -> Callable[[str | None], str | None]:
    """A callback that accepts only the values of `values`, the name of one of the Literal or
    enum types of `core.jobs.contract` (the lists of SPEC.md), so that a value the server would
    refuse is a usage error before any request. The contract is imported when a value is
    checked, not when the CLI starts."""

    def check(value: str | None) -> str | None:
        if value is None:
            return value
        from core.jobs import contract

        kind = getattr(contract, values)
        allowed = get_args(kind) or tuple(member.value for member in kind)
        if value not in allowed:
            raise typer.BadParameter(
                f"{value!r} is not one of {', '.join(allowed)}", param_hint=option
            )
        return value

    return check


@contextmanager
def connected(api_url: str | None, api_key: str | None) -> Iterator[Client]:
    """The client, and the API's errors as exit code 3 with one line: code and message."""
    from sfumato_client import APIError, Client, JobFailedError

    if not api_url:
        err().print("error: no server: pass --api-url or set SFUMATO_API_URL (ending in /v1)")
        raise typer.Exit(EXIT_USAGE)
    try:
        with Client(api_url, api_key) as client:
            yield client
    except JobFailedError as failed:
        err().print(f"job {failed.job.id} failed: {failed.message}", markup=False)
        raise typer.Exit(EXIT_JOB_FAILED) from None
    except APIError as error:
        # Every route is under /v1: a 404 from an address without it names the likelier cause.
        if error.status == 404 and not api_url.rstrip("/").endswith("/v1"):
            api_error(error, f"the API's address ends in /v1; is {api_url} missing it?")
        api_error(error)


def api_error(error: APIError, hint: str | None = None) -> NoReturn:
    label = error.code or (f"HTTP {error.status}" if error.status else "CONNECTION_ERROR")
    err().print(f"error: {label}: {error.message}", markup=False, soft_wrap=True)
    # The envelope's details under the message, one a line (a field and why, or a figure).
    for name, detail in (error.details or {}).items():
        err().print(f"  {name}: {detail}", markup=False, soft_wrap=True)
    if hint:
        err().print(f"hint: {hint}", markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_API_ERROR)


def standing(job: JobData, now: datetime | None = None) -> str:
    """Where a job in flight stands, in words: a pending job's place in its queue and when it
    should start, a processing job's expected end ("" when the server says nothing)."""
    if job.status == "pending" and job.queue_position is not None:
        start = _in(job.estimated_start_at, now)
        return f"#{job.queue_position} in queue" + (f", starts {start}" if start else "")
    if job.status == "processing":
        end = _in(job.estimated_completion_at, now)
        return f"ends {end}" if end else ""
    return ""


def _in(moment: str | None, now: datetime | None) -> str:
    """`in about 40 s` (or minutes) from now; "" for None."""
    if moment is None:
        return ""
    when = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    seconds = max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return f"in about {seconds:.0f} s" if seconds < 120 else f"in about {seconds / 60:.0f} min"


def follow(client: Client, job: Job, preview: Path | None = None, as_json: bool = False) -> Job:
    """Prints the job id, shows a progress bar until the job is terminal (the event stream,
    else long-polls) and returns it; raises JobFailedError when it failed. Ctrl-C asks whether
    to cancel the job (otherwise it keeps running, to be found again with `sfumato jobs show`).
    `preview`: the job's live preview is written there each time it changes. With `as_json` the
    id goes to stderr, leaving stdout to the JSON result."""
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
    )
    try:
        typer.echo(f"job {job.id} ({job.type})", err=as_json)
        with Progress(*columns, console=err(), transient=False) as progress:
            task = progress.add_task(job.status, total=1.0)

            shown: set[str] = set()

            def show(update: Any) -> None:
                where = standing(update)
                progress.update(
                    task,
                    description=f"{update.status} ({where})" if where else update.status,
                    completed=update.progress or 0.0,
                )
                if preview is not None and update.preview_url and update.preview_url not in shown:
                    shown.add(update.preview_url)
                    update.save_preview(preview)

            return client.jobs.wait(job.id, on_progress=show)
    except KeyboardInterrupt:
        interrupted(client, job)


def interrupted(client: Client, job: Job) -> NoReturn:
    try:
        cancel = typer.confirm(f"\ncancel job {job.id}?", default=False, err=True)
    except (KeyboardInterrupt, typer.Abort):
        cancel = False
    if cancel:
        cancelled = client.jobs.cancel(job.id)
        err().print(f"job {job.id} cancelled ({cancelled.status})")
    else:
        err().print(f"job {job.id} keeps running: sfumato jobs show {job.id}")
    raise typer.Exit(EXIT_INTERRUPTED)


def finish(
    client: Client, job: Job, output: Path, preview: Path | None = None, as_json: bool = False
) -> None:
    """Follows a generation to its end (its live preview written to `preview`, when given) and
    writes its images or video under `output`; the seed and the job's notes (what its pipeline
    did, and what it could not draw) go to stderr."""
    done = follow(client, job, preview, as_json)
    if done.result is not None and done.result.seed is not None:
        # On standard error: standard output stays the files written.
        err().print(f"seed {done.result.seed} (the same command with --seed remakes it)")
    for note in done.notes or []:
        err().print(f"note: {note}", markup=False, soft_wrap=True)
    paths = done.download(output)
    if as_json:
        print_json({"job": wire(done), "files": [str(path) for path in paths]})
        return
    for path in paths:
        typer.echo(str(path))
