"""The client's Server-Sent Events decoder on the format's own cases."""

from __future__ import annotations

from sfumato_client.sse import ServerSentEvent, SSEDecoder


def decode(text: str) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [decoder.feed(line) for line in text.split("\n")]
    return [event for event in events if event is not None]


def test_events_ids_comments_and_multiline_data() -> None:
    stream = (
        ": heartbeat\n\n"
        'id: 1\ndata: {"a": 1}\n\n'
        "event: update\ndata:first\ndata: second\n\n"
        "id: 3\r\nretry: 1500\ndata: x\n\n"
        "data: no blank line yet"
    )
    assert decode(stream) == [
        ServerSentEvent(data='{"a": 1}', id="1"),
        ServerSentEvent(data="first\nsecond", event="update", id="1"),
        ServerSentEvent(data="x", id="3", retry=1500),
    ]


def test_an_event_without_data_dispatches_nothing_but_keeps_its_id() -> None:
    decoder = SSEDecoder()
    for line in ("id: 7", "", "data: y", ""):
        event = decoder.feed(line)
    assert event == ServerSentEvent(data="y", id="7") and decoder.last_event_id == "7"
