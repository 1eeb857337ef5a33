"""A job's Server-Sent Events stream as the tests read it: open it, parse its events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

import httpx


@dataclass
class Event:
    id: str | None
    job: dict


def sse_lines(response: httpx.Response) -> Iterator[str]:
    """The stream's lines, the blank line closing each event included."""
    yield from response.iter_lines()


def events_of(lines: Iterator[str], comments: list[str] | None = None) -> Iterator[Event]:
    """Parse `text/event-stream`: `id:` and `data:` fields, events closed by a blank line."""
    event_id: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield Event(event_id, json.loads("\n".join(data))["data"])
            event_id, data = None, []
        elif line.startswith(":"):
            if comments is not None:
                comments.append(line)
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                event_id = value
            elif field == "data":
                data.append(value)


def stream(
    client: httpx.Client, job_id: str, last_event_id: str | None = None
) -> AbstractContextManager[httpx.Response]:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    return client.stream("GET", f"/jobs/{job_id}/events", headers=headers)
