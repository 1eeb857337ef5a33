"""What every command shares: the services of this process, failing with a message, logging.

Commands import the service's modules when they run, never at the top of a command module: the
CLI starts (`--help`, `--version`) without loading the database, the broker or the pipelines
(tests/client/test_cli_start.py holds it to that).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from core.services import Services

JsonOption = Annotated[
    bool,
    typer.Option("--json", help="The result as one JSON document on stdout (progress on stderr)."),
]


def print_json(value: Any) -> None:
    """The command's result for a script: one JSON document on stdout, nothing else there."""
    import json

    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def json_time(moment: datetime | None) -> str | None:
    """A time in a JSON result as the API writes it (UTC, milliseconds, `Z`)."""
    from core.clock import isoformat_ms

    return isoformat_ms(moment) if moment is not None else None


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


def configure_logging(level: str, log_format: str = "text", access_log: bool = False) -> None:
    """The root logger at `level`, as text or one JSON object a line; the gateway's access log
    (gateway.metrics.ACCESS_LOG) only when asked for."""
    from gateway.metrics import ACCESS_LOG

    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    logging.getLogger(ACCESS_LOG).setLevel(logging.INFO if access_log else logging.WARNING)


# What a LogRecord carries of its own: the rest of its attributes came in `extra=`.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the fields a call passed in
    `extra=` (the access log's requestId, method, route, status, durationMs) and a traceback
    when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        import json

        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry |= {k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
