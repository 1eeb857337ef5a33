"""Units where the logic is dense: ids, cursors, field paths, the crash envelope."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from core.clock import isoformat_ms
from core.events import JobEvents
from core.events.credentials import CredentialsMarker
from core.ids import parse_uuid, uuid7
from core.pagination import BadCursor, decode_cursor, encode_cursor
from gateway.errors import field_path


def test_uuid7_is_version_7_and_ordered() -> None:
    ids = [uuid7() for _ in range(5000)]
    assert all(value.version == 7 and value.variant == "specified in RFC 4122" for value in ids)
    assert [str(value) for value in ids] == sorted(str(value) for value in ids)
    assert len(set(ids)) == len(ids)


def test_parse_uuid() -> None:
    assert (
        parse_uuid("0190B5D2-3F1E-7C1A-8B2A-9D0E1F2A3B4C") == "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"
    )
    assert parse_uuid("nope") is None
    assert parse_uuid("") is None
    canonical = "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"
    assert parse_uuid(canonical) == canonical
    assert parse_uuid("{" + canonical + "}") == canonical
    assert parse_uuid(canonical.replace("-", "")) == canonical
    assert parse_uuid(canonical + "0") is None
    assert parse_uuid(None) is None  # type: ignore[arg-type]


def test_cursor_round_trip_and_garbage() -> None:
    moment = datetime(2026, 11, 22, 10, 4, 5, 123000, tzinfo=UTC)
    job_id = str(uuid7())
    assert decode_cursor(encode_cursor(moment, job_id)) == (moment, job_id)
    for garbage in ("", "garbage", "!!!", encode_cursor(moment, "not-a-uuid")):
        with pytest.raises(BadCursor):
            decode_cursor(garbage)


def test_iso_milliseconds() -> None:
    assert isoformat_ms(datetime(2026, 11, 22, 10, 4, 5, 123456, tzinfo=UTC)) == (
        "2026-11-22T10:04:05.123Z"
    )
    assert isoformat_ms(datetime(2026, 11, 22, 10, 4, 5)) == "2026-11-22T10:04:05.000Z"  # naive
    east = timezone(timedelta(hours=2))
    assert isoformat_ms(datetime(2026, 11, 22, 1, 4, 5, 999999, tzinfo=east)) == (
        "2026-11-21T23:04:05.999Z"
    )


def test_credential_events_reach_other_mappings_of_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Processes of an embedded deployment share the marker's bytes (a shared mapping); one
    left empty by an earlier release is grown to size, a change shows at the next read and
    touches the file (what an earlier release's gateway watches), and a marker replaced or
    removed is mapped afresh, as a change."""
    monkeypatch.setattr(CredentialsMarker, "CHECK_SECONDS", 0.0)
    marker = tmp_path / "sfumato.db-credentials"
    marker.write_bytes(b"")
    gateway, cli = JobEvents(marker), JobEvents(marker)
    told: list[str] = []
    gateway.on_credentials_changed(lambda: told.append("changed"))
    assert marker.stat().st_size == CredentialsMarker.SIZE
    assert gateway.receives_every_change() and told == []
    touched = marker.stat().st_mtime_ns
    time.sleep(0.01)
    cli.publish_credentials_changed()
    assert marker.stat().st_mtime_ns > touched
    assert gateway.receives_every_change() and told == ["changed"]
    assert gateway.receives_every_change() and told == ["changed"], "told once per change"
    replacement = tmp_path / "replacement"
    replacement.write_bytes(b"")
    os.replace(replacement, marker)  # as an earlier release's CLI published a change
    assert gateway.receives_every_change() and told == ["changed"] * 2
    cli.publish_credentials_changed()  # into the file there now, not the one it had mapped
    assert gateway.receives_every_change() and told == ["changed"] * 3
    marker.unlink()
    assert gateway.receives_every_change() and told == ["changed"] * 4
    assert marker.stat().st_size == CredentialsMarker.SIZE


def test_a_marker_that_cannot_be_mapped_leaves_no_caller_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removed where this process may not create it again: every read counts as a change (no
    cached caller is used), a change made here says the others were not told and still drops
    this process's own cache, and once the marker can be mapped again all is as before."""
    monkeypatch.setattr(CredentialsMarker, "CHECK_SECONDS", 0.0)
    marker = tmp_path / "sfumato.db-credentials"
    gateway = JobEvents(marker)
    told: list[str] = []
    gateway.on_credentials_changed(lambda: told.append("changed"))
    mapped = CredentialsMarker._mapped

    def unusable(self: CredentialsMarker) -> object:
        raise PermissionError("a read-only directory")

    monkeypatch.setattr(CredentialsMarker, "_mapped", unusable)
    marker.unlink()
    assert gateway.receives_every_change() and gateway.receives_every_change()
    assert told == ["changed"] * 2
    with pytest.raises(PermissionError, match="not told"):
        gateway.publish_credentials_changed()
    assert len(told) == 3, "its own cache dropped all the same"
    monkeypatch.setattr(CredentialsMarker, "_mapped", mapped)
    assert gateway.receives_every_change() and len(told) == 4  # mapped afresh: a change
    assert gateway.receives_every_change() and len(told) == 4


def test_field_paths() -> None:
    assert field_path(("body", "references", 2)) == "references[2]"
    assert field_path(("query", "limit")) == "limit"
    assert field_path(("body",)) == "body"
    assert field_path(("body", "stops", 0, "hex")) == "stops[0].hex"


def test_a_crash_is_a_500_envelope_without_a_trace() -> None:
    from fastapi import FastAPI

    from gateway.errors import install_error_handlers

    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "INTERNAL_ERROR", "message": "Internal server error", "details": None}
    }
    assert "secret" not in response.text
