"""A Server-Sent Events decoder (the WHATWG event-stream format), fed one line at a time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turns the lines of a `text/event-stream` into events; comments (heartbeats) yield none."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        # The last event id persists across events, as the format defines.
        self.last_event_id: str | None = None

    def feed(self, line: str) -> ServerSentEvent | None:
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event, retry = self._data, self._event, self._retry
        self._data, self._event, self._retry = [], "", None
        if not data:
            return None
        return ServerSentEvent(
            data="\n".join(data), event=event or "message", id=self.last_event_id, retry=retry
        )
