"""Jobs through HTTP: generate to completion, long-poll, the list, cancel."""

from __future__ import annotations

import io
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from PIL import Image

from benchmarks.testkit.pipelines import cancelled_prompts
from benchmarks.testkit.waits import wait_until
from core.jobs import service as jobs_service
from core.tables import Media
from tests.support.http_jobs import create, status_of, wait_done
from tests.support.service import Service

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_generate_completes_with_pngs_of_the_promised_size(service: Service, key: str) -> None:
    with service.client(key) as client:
        created = create(client, "a misty pine forest at dawn", aspectRatio="16:9", variations=2)
        assert created["type"] == "image.generate"
        assert created["status"] == "pending"
        assert ISO_MS.match(created["createdAt"])
        # Long-polled as a client does, past one wait when a busy machine runs it slowly.
        job = wait_done(client, created["id"])
        assert job["status"] == "completed", job
        assert client.get(f"/images/{created['id']}").json()["data"]["status"] == "completed"
        images = job["result"]["images"]
        assert len(images) == 2 and images[0]["id"] != images[1]["id"]
        pixels = []
        for image in images:
            assert (image["width"], image["height"]) == (1360, 768)
            assert image["url"].startswith("http://")
            response = httpx.get(image["url"])  # no API key: the URL is signed
            assert response.status_code == 200
            decoded = Image.open(io.BytesIO(response.content))
            assert decoded.format == "PNG"
            assert decoded.size == (1360, 768)
            pixels.append(decoded.convert("RGB").tobytes())
        assert pixels[0] != pixels[1], "variations must differ"
    assert service.balance(key) == 1000 - 4


def test_job_reads_carry_the_pipelines_notes(service: Service, key: str) -> None:
    """`notes` (extension): what the builtin painter drew, and what it cannot draw."""
    with service.client(key) as client:
        created = create(client, "a red bicycle against a brick wall", quality="low")
        assert "notes" not in created
        job = wait_done(client, created["id"])
        assert job["status"] == "completed", job
        notes = job["notes"]
        assert notes[0].startswith("builtin procedural painter:")
        assert "drew: bicycle (red), brick wall" in notes, notes
        assert not any("not drawn" in note or "cannot draw" in note for note in notes), notes
        listed = client.get("/jobs").json()["data"][0]
        assert listed["id"] == job["id"] and listed["notes"] == notes
        undrawable = wait_done(client, create(client, "a quarterly report", quality="low")["id"])
        assert any(
            note.startswith("cannot draw the prompt's subject (report)")
            for note in undrawable["notes"]
        ), undrawable["notes"]
        pending = create(client, "[sleep 2] hills")
        assert client.get(f"/jobs/{pending['id']}").json()["data"]["notes"] == []


def test_reads_name_a_file_by_one_url_valid_at_least_as_long_as_configured(
    service: Service, key: str
) -> None:
    """Signed once per file and hour, then reused (a job polled every second does not sign
    its files in every answer), never shorter-lived than `signed_url_seconds`."""
    first_asked = time.time()
    with service.client(key) as client:
        job = wait_done(client, create(client, "[sleep 0] one url")["id"])
        again = client.get(f"/jobs/{job['id']}").json()["data"]
    last_asked = time.time()
    urls = [image["url"] for image in job["result"]["images"]]
    assert urls == [image["url"] for image in again["result"]["images"]]
    expires = int(re.search(r"expires=(\d+)", urls[0]).group(1))  # type: ignore[union-attr]
    configured = service.services.settings.signed_url_seconds
    assert first_asked + configured <= expires <= last_asked + configured + 3600
    assert httpx.get(urls[0]).status_code == 200


def test_signed_urls_refuse_tampering(service: Service, key: str) -> None:
    with service.client(key) as client:
        job = wait_done(client, create(client, "[sleep 0] signed")["id"])
    url = job["result"]["images"][0]["url"]
    assert httpx.get(url.replace("signature=", "signature=0")).status_code == 403
    assert httpx.get(url.split("?")[0]).status_code == 403


def test_wait_returns_promptly_on_completion_and_bad_wait_is_400(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        job = create(client, "[sleep 1] a short one")
        started = time.monotonic()
        done = client.get(f"/jobs/{job['id']}", params={"wait": "true"}).json()["data"]
        elapsed = time.monotonic() - started
        assert done["status"] == "completed"
        assert elapsed < 5, elapsed
        bad = client.get(f"/jobs/{job['id']}", params={"wait": "yes"})
        assert bad.status_code == 400
        assert "wait" in bad.json()["error"]["details"]
        assert client.get(f"/jobs/{job['id']}", params={"wait": "false"}).status_code == 200


def test_wait_gives_up_after_the_hold_and_returns_the_job_as_is(service: Service) -> None:
    key = service.new_key()
    with service.client(key) as client:
        job = create(client, "[sleep 12] longer than the hold")
        wait_until(lambda: status_of(client, job["id"]) == "processing", 20, "processing")
        held = service.services.settings.wait_seconds
        started = time.monotonic()
        response = client.get(f"/jobs/{job['id']}", params={"wait": "true"})
        elapsed = time.monotonic() - started
        assert response.status_code == 200
        assert response.json()["data"]["status"] == "processing"
        assert held - 1 < elapsed < held + 5
        client.post(f"/jobs/{job['id']}/cancel")


def test_failed_job_is_refunded_and_says_why(service: Service, key: str) -> None:
    with service.client(key) as client:
        job = wait_done(client, create(client, "[fail] please")["id"])
    assert job["status"] == "failed"
    assert job["error"]["code"] == "GENERATION_FAILED"
    assert "refunded" in job["error"]["message"]
    assert "result" not in job
    assert service.balance(key) == 1000


def test_pagination_walks_120_jobs_without_gaps_or_duplicates(service: Service) -> None:
    key = service.new_key(credits=10_000)
    with service.client(key) as client:

        def make(index: int) -> str:
            return create(client, f"[sleep 0] job {index}", quality="low")["id"]

        with ThreadPoolExecutor(8) as pool:
            created = set(pool.map(make, range(120)))
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, object] = {"limit": 50}
            if cursor:
                params["cursor"] = cursor
            page = client.get("/jobs", params=params).json()
            seen.extend(job["id"] for job in page["data"])
            pages += 1
            # A job created mid-walk is newer than the cursor: it must not show up later.
            if pages == 1:
                create(client, "[sleep 0] created during the walk", quality="low")
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert pages == 3
        assert len(seen) == len(set(seen)) == 120
        assert set(seen) == created
        stamps = [client.get(f"/jobs/{job_id}").json()["data"]["createdAt"] for job_id in seen[:5]]
        assert stamps == sorted(stamps, reverse=True)
        default = client.get("/jobs").json()
        assert len(default["data"]) == 20 and default["nextCursor"]
        for bad in ({"limit": 0}, {"limit": 51}, {"status": "done"}, {"cursor": "garbage"}):
            response = client.get("/jobs", params=bad)
            assert response.status_code == 400, (bad, response.text)
            assert set(response.json()["error"]["details"]) == set(bad)


def test_list_filters_by_status(service: Service) -> None:
    key = service.new_key()
    with service.client(key) as client:
        ok = wait_done(client, create(client, "[sleep 0] fine")["id"])
        bad = wait_done(client, create(client, "[fail] broken")["id"])
        failed = client.get("/jobs", params={"status": "failed"}).json()["data"]
        completed = client.get("/jobs", params={"status": "completed"}).json()["data"]
    assert [job["id"] for job in failed] == [bad["id"]]
    assert [job["id"] for job in completed] == [ok["id"]]


def test_cancel_pending_job_refunds_in_full_and_it_never_runs(service: Service) -> None:
    blocker_key = service.new_key()
    key = service.new_key()
    slots = service.services.config.queues.image.concurrency
    with service.client(blocker_key) as blocker, service.client(key) as client:
        blockers = [create(blocker, "[sleep 3] blocker")["id"] for _ in range(slots)]
        wait_until(
            lambda: all(status_of(blocker, job) == "processing" for job in blockers),
            20,
            "blockers running",
        )
        job = create(client, "[sleep 0] waits in the queue")
        assert status_of(client, job["id"]) == "pending"
        cancelled = client.post(f"/jobs/{job['id']}/cancel")
        assert cancelled.status_code == 200
        data = cancelled.json()["data"]
        assert data["status"] == "failed"
        assert data["error"] == {"code": "GENERATION_FAILED", "message": "Job cancelled"}
        assert service.balance(key) == 1000
        # Queued behind the cancelled job's task: once it ran, that task was taken and dropped.
        behind = create(blocker, "[sleep 0] queued behind it")["id"]
        for blocker_id in [*blockers, behind]:
            wait_done(blocker, blocker_id)
        assert client.get(f"/jobs/{job['id']}").json()["data"] == data
        again = client.post(f"/jobs/{job['id']}/cancel").json()["data"]
        assert again == data
    assert service.balance(key) == 1000


def test_cancel_processing_job_keeps_one_credit_and_discards_output(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        prompt = f"[sleep 5] long {uuid.uuid4()}"
        job = create(client, prompt, variations=2)
        wait_until(lambda: status_of(client, job["id"]) == "processing", 20, "processing")
        cancelled = client.post(f"/jobs/{job['id']}/cancel").json()["data"]
        assert cancelled["status"] == "failed"
        assert cancelled["error"]["message"] == "Job cancelled"
        wait_until(lambda: prompt in cancelled_prompts(), 20, "the worker to stop the job")
        assert client.get(f"/jobs/{job['id']}").json()["data"]["status"] == "failed"
    assert service.balance(key) == 1000 - 1
    with service.services.db.read() as session:
        assert session.query(Media).filter(Media.job_id == job["id"]).count() == 0


def test_cancel_completed_job_returns_it_unchanged(service: Service, key: str) -> None:
    with service.client(key) as client:
        done = wait_done(client, create(client, "[sleep 0] quick")["id"])
        again = client.post(f"/jobs/{done['id']}/cancel")
        assert again.status_code == 200
        assert again.json()["data"]["status"] == "completed"
    assert service.balance(key) == 1000 - 2


def test_many_held_long_polls_all_wake(service: Service, key: str) -> None:
    with service.client(key) as client:
        job = create(client, "[sleep 1.5] watched")
    results: list[str] = []
    lock = threading.Lock()

    def hold() -> None:
        with service.client(key) as own:
            status = own.get(f"/jobs/{job['id']}", params={"wait": "true"}).json()["data"]
        with lock:
            results.append(status["status"])

    threads = [threading.Thread(target=hold) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == ["completed"] * 40


def test_long_polls_of_one_job_woken_together_read_it_once(
    service: Service, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long-polls held on one job each read it once when they arrive; a change that wakes
    them all is followed by one read between them, not one each (no query per waiter)."""
    view_owned = jobs_service.view_owned
    views: list[str] = []

    async def counted(db: Any, account_id: str, job_id: str) -> Any:  # reads as before, counted
        views.append(job_id)
        return await view_owned(db, account_id, job_id)

    holders = 20
    with service.client(key) as client:
        job = create(client, "[sleep 2] watched")
        wait_until(lambda: status_of(client, job["id"]) == "processing", 20, "processing")
    monkeypatch.setattr(jobs_service, "view_owned", counted)
    with ThreadPoolExecutor(holders) as pool:
        held = [pool.submit(_held_status, service, key, job["id"]) for _ in range(holders)]
        answers = [future.result(30) for future in held]
    monkeypatch.undo()
    assert answers == ["completed"] * holders
    # Each holder's first read, then the reads after the completion (one, or a few where
    # holders were woken by separate deliveries).
    reads = views.count(job["id"])
    assert holders <= reads <= holders + 3, reads


def _held_status(service: Service, key: str, job_id: str) -> str:
    with service.client(key) as own:
        status: str = own.get(f"/jobs/{job_id}", params={"wait": "true"}).json()["data"]["status"]
    return status


def test_a_job_read_answers_alike_in_every_shape_of_its_request(service: Service, key: str) -> None:
    """The usual shapes of a read (no query, `wait=true|false` alone) take a short way past
    FastAPI's dependency solving (gateway/jobs/router.JobReadRoute); the same read in any other
    shape goes FastAPI's way. Both answer alike, errors included."""

    def answer(client: httpx.Client, path: str) -> tuple[int, object]:
        response = client.get(path)
        # Signed file URLs carry their signing time: compare what they point at.
        text = re.sub(r'(https?://[^"?]+)\?[^"]*', r"\1", response.text)
        return response.status_code, text

    with service.client(key) as client, service.client(service.new_key()) as stranger:
        job_id = wait_done(client, create(client, "[sleep 0] one read, many shapes")["id"])["id"]
        for path in (f"/jobs/{job_id}", f"/images/{job_id}"):
            usual = answer(client, path)
            assert usual[0] == 200
            for query in ("?wait=false", "?wait=true", "?wait=false&", "?wait=%74rue"):
                assert answer(client, path + query) == usual, query
            assert answer(client, path.replace(job_id, job_id.upper())) == usual
            unknown = answer(stranger, path)
            assert unknown[0] == 404
            assert answer(stranger, path + "?wait=false&") == unknown
        refused = {
            "?wait=maybe": 400,
            "?wait=true&wait=true": 400,
            "?wait=TRUE": 400,
        }
        for query, status in refused.items():
            assert client.get(f"/jobs/{job_id}{query}").status_code == status, query
        assert client.get(f"/videos/{job_id}").status_code == 404
        assert client.get(f"/videos/{job_id}?wait=false&").status_code == 404
