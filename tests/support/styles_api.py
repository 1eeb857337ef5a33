"""Styles through the HTTP API: the deployments that may fetch the fixture sites, a style saved
straight into the database, and extraction jobs followed to their end."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from core.accounts import authentication
from core.ids import new_id
from core.tables import Style
from tests.support.service import Service

FETCHING = pytest.mark.parametrize("service", ["s3"], indirect=True)
# Extraction saved on SQLite (embedded) and on PostgreSQL by worker processes.
FETCHING_BOTH_MODES = pytest.mark.parametrize(
    "service", ["s3", "distributed-fetching"], indirect=True
)
BOTH_MODES = pytest.mark.parametrize("service", ["embedded", "distributed"], indirect=True)


def saved_style(service: Service, key: str, colours: list[dict[str, Any]] | None = None) -> str:
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    style = Style(
        id=new_id(),
        account_id=caller.account_id,
        name="Test brand",
        colours=colours or [],
        typography=[],
        tone=[],
        aesthetic="",
    )
    with service.services.db.write() as session:
        session.add(style)
    return style.id


def extract(client: httpx.Client, url: str, **fields: object) -> dict:
    response = client.post("/styles/extract", json={"url": url, **fields})
    assert response.status_code == 202, response.text
    created = response.json()["data"]
    assert created["type"] == "style.extract"
    # The first extraction of a process loads the sentence model: give it time on a busy machine.
    for _ in range(30):
        job = client.get(f"/styles/extractions/{created['id']}", params={"wait": "true"})
        data = job.json()["data"]
        if data["status"] in ("completed", "failed"):
            return data
    raise AssertionError("the extraction did not finish")


def extracted_style(client: httpx.Client, url: str) -> str:
    """The id of the style an extraction of `url` saved."""
    job = extract(client, url)
    assert job["status"] == "completed", job
    return str(job["result"]["style"]["id"])
