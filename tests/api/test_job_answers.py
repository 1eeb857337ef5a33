"""A finished job's answer body is kept (`gateway/jobs/presenter.JobAnswers`) and given again only
while its row, its files address and its URLs' validity are those it was made with; it is then
byte for byte what presenting the job afresh gives."""

from __future__ import annotations

from collections import namedtuple
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from core.storage.local import LocalStorage
from gateway.jobs.presenter import JobAnswers, JobPresenter
from gateway.signing import UrlSigner

Row = namedtuple(
    "Row",
    ["id", "type", "status", "created_at", "result", "error", "progress", "message", "preview_key"],
)
HOUR = 3600


def completed(message: str | None = None) -> Row:
    image = {"id": "m1", "key": "images/j1/m1.png", "width": 8, "height": 8}
    created = datetime(2026, 11, 26, 10, 0, 0, 123000, tzinfo=UTC)
    return Row(
        "j1", "image.generate", "completed", created, {"images": [image]}, None, 1.0, message, None
    )


def fresh(job: Row, signer: UrlSigner) -> bytes:
    return orjson.dumps({"data": JobPresenter(signer).job(job)})


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path, b"signing key")


def test_a_finished_jobs_body_is_kept_and_equals_a_fresh_one(storage: LocalStorage) -> None:
    answers = JobAnswers()
    signer = UrlSigner(storage, "http://a.example/", HOUR)
    first = answers.body(completed(), signer)
    assert first == fresh(completed(), signer)
    assert answers.body(completed(), signer) is first, "an equal row: the kept body"


def test_a_changed_row_another_address_or_a_new_signing_hour_make_a_new_body(
    storage: LocalStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = JobAnswers()
    signer = UrlSigner(storage, "http://a.example/", HOUR)
    first = answers.body(completed(), signer)
    noted = answers.body(completed("a note"), signer)
    assert noted == fresh(completed("a note"), signer) and noted != first
    elsewhere = UrlSigner(storage, "http://b.example/", HOUR)
    assert answers.body(completed("a note"), elsewhere) == fresh(completed("a note"), elsewhere)
    assert b"http://b.example/" in answers.body(completed("a note"), elsewhere)
    now = datetime.now(UTC).timestamp()
    monkeypatch.setattr(storage, "clock", lambda: now + 2 * HOUR)
    later = answers.body(completed("a note"), signer)
    assert later == fresh(completed("a note"), signer) and later != noted


def test_an_unfinished_jobs_body_is_never_kept(storage: LocalStorage) -> None:
    answers = JobAnswers()
    signer = UrlSigner(storage, "http://a.example/", HOUR)
    running = completed()._replace(status="processing", result=None, progress=0.5)
    first = answers.body(running, signer)
    assert first == fresh(running, signer)
    assert answers.body(running, signer) is not first
