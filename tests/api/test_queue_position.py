"""A job in flight's standing on its reads, through a real server in both modes: a pending job's
`queuePosition` in the order the scheduler really starts jobs (the video line's one video at a
time per account included) and `estimatedStartAt`, null until its queue has completed a run; a
processing job's `estimatedCompletionAt`; the same on lists and on the event stream.

Each mode gets a service of its own, started for this module: its queues begin with no history,
and no other test's jobs stand in them. Its image queue runs two jobs at once and its video queue
one (the shipped `[queues]` defaults), so two long `[sleep]` jobs hold every image slot and keep
the jobs behind them waiting as long as a test needs; cancels move the queue on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta

import httpx
import pytest
from typer.testing import CliRunner

from core.tables import JobRow
from sfumato.cli import app
from sfumato_client import Client
from tests.conftest import distributed_mode, embedded_mode, fresh_postgres_database
from tests.support.http_jobs import create, status_of, video_done, wait_done
from tests.support.job_events import events_of, sse_lines, stream
from tests.support.service import Service, running_service, wait_until

pytestmark = pytest.mark.slow
HOLD = "[sleep 60]"  # a job that stays on its worker until the test cancels it


@pytest.fixture(scope="module", params=["embedded", "distributed"])
def fresh(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    with ExitStack() as stack:
        if request.param == "embedded":
            mode = embedded_mode()
        else:
            database = stack.enter_context(fresh_postgres_database())
            mode = distributed_mode(database, request.getfixturevalue("redis_url"))
        # The held jobs must stay on their workers until cancelled: a lease of the suite's 2 s can
        # lapse on a loaded machine, handing a holder back and moving every position.
        mode.env["SFUMATO_LEASE_SECONDS"] = "30"
        data_dir = tmp_path_factory.mktemp(f"queue-{request.param}")
        yield stack.enter_context(running_service(mode, data_dir))


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def read(client: httpx.Client, job_id: str) -> dict:
    response = client.get(f"/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()["data"]


def processing(client: httpx.Client, *job_ids: str) -> None:
    for job_id in job_ids:
        wait_until(
            lambda job_id=job_id: status_of(client, job_id) == "processing", 60, f"{job_id} started"
        )


def positions(client: httpx.Client, job_ids: list[str]) -> list[int | None]:
    return [read(client, job_id).get("queuePosition") for job_id in job_ids]


def cancel(client: httpx.Client, *job_ids: str) -> None:
    for job_id in job_ids:
        assert client.post(f"/jobs/{job_id}/cancel").status_code == 200


def test_image_positions_follow_the_queue_and_estimates_wait_for_history(fresh: Service) -> None:
    key = fresh.new_key(credits=100_000)
    with fresh.client(key) as client:
        holders = [create(client, HOLD, quality="low")["id"] for _ in range(2)]
        processing(client, *holders)
        waiting = [create(client, HOLD, quality="low")["id"] for _ in range(4)]

        jobs = [read(client, job_id) for job_id in waiting]
        assert [job["queuePosition"] for job in jobs] == [1, 2, 3, 4]
        # No run of the queue completed yet: nothing to estimate a start from.
        assert [job["estimatedStartAt"] for job in jobs] == [None] * 4
        assert all("estimatedCompletionAt" not in job for job in jobs)
        listed = client.get("/jobs", params={"status": "pending"}).json()["data"]
        assert {job["id"]: job["queuePosition"] for job in listed} == dict(
            zip(waiting, [1, 2, 3, 4], strict=True)
        )
        # A running job's end, from its progress rate: about its 60 s after its start.
        holder = wait_until(
            lambda: (job := read(client, holders[0]))["estimatedCompletionAt"] and job,
            30,
            "an estimated completion",
        )
        assert "queuePosition" not in holder
        end = moment(holder["estimatedCompletionAt"])
        created = moment(holder["createdAt"])
        assert created + timedelta(seconds=40) < end < created + timedelta(seconds=120), holder

        # A slot frees: the first waiting job starts and the others move up.
        cancel(client, holders[0])
        processing(client, waiting[0])
        assert positions(client, waiting) == [None, 1, 2, 3]
        # A waiting job leaves: those behind it move up.
        cancel(client, waiting[2])
        assert positions(client, waiting) == [None, 1, None, 2]
        cancel(client, holders[1], waiting[0], waiting[1], waiting[3])

        # One completed run is a history: the estimates follow the queue's slots.
        assert wait_done(client, create(client, "[sleep 0.2] quick")["id"])["status"] == (
            "completed"
        )
        holders = [create(client, HOLD, quality="low")["id"] for _ in range(2)]
        processing(client, *holders)
        ends = wait_until(
            lambda: (
                all(ends := [read(client, job)["estimatedCompletionAt"] for job in holders])
                and ends
            ),
            30,
            "both holders' estimated completions",
        )
        waiting = [create(client, "[sleep 0.2] next", quality="low")["id"] for _ in range(3)]
        jobs = [read(client, job_id) for job_id in waiting]
        assert [job["queuePosition"] for job in jobs] == [1, 2, 3]
        starts = [moment(job["estimatedStartAt"]) for job in jobs]
        # The first two take the two slots as their holders end; the third follows the first
        # after one run of the queue (a quick one).
        first_free = min(moment(end) for end in ends)
        assert abs((starts[0] - first_free).total_seconds()) < 5, (starts, ends)
        assert starts[0] <= starts[1], starts
        assert timedelta(0) < starts[2] - starts[0] < timedelta(seconds=5), starts
        cancel(client, *holders)
        for job_id in waiting:
            assert wait_done(client, job_id)["status"] == "completed"
        assert all("queuePosition" not in read(client, job_id) for job_id in waiting)


def test_the_long_poll_and_the_event_stream_carry_a_pending_jobs_position(
    fresh: Service,
) -> None:
    key = fresh.new_key(credits=100_000)
    with fresh.client(key) as client, fresh.client(key) as control:
        holders = [create(client, HOLD, quality="low")["id"] for _ in range(2)]
        processing(client, *holders)
        ahead, followed = (create(client, HOLD, quality="low")["id"] for _ in range(2))
        # A long-poll that ends with the job still pending answers its standing too.
        polled = client.get(f"/jobs/{followed}", params={"wait": "true"}).json()["data"]
        assert (polled["status"], polled["queuePosition"]) == ("pending", 2)
        seen = []
        with stream(client, followed) as response:
            for event in events_of(sse_lines(response)):
                seen.append(event)
                job = event.job
                if job["status"] == "pending" and job["queuePosition"] == 2:
                    cancel(control, ahead)  # the job ahead leaves: one more event
                elif job["status"] == "pending" and job["queuePosition"] == 1:
                    cancel(control, followed)  # ends the stream
        assert [(event.id, event.job.get("queuePosition")) for event in seen] == [
            ("pending/0/2", 2),
            ("pending/0/1", 1),
            ("failed/0", None),
        ]
        assert all("estimatedStartAt" in event.job for event in seen[:2])
        cancel(control, *holders)


def test_the_python_client_and_the_cli_show_the_standing(fresh: Service) -> None:
    key = fresh.new_key(credits=100_000)
    env = {"SFUMATO_API_URL": fresh.api, "SFUMATO_API_KEY": key}
    with Client(fresh.api, key) as client:
        holders = [client.images.generate(HOLD, quality="low") for _ in range(2)]
        with fresh.client(key) as http:
            processing(http, *(holder.id for holder in holders))
            waiting = client.images.generate("[sleep 0.2] shown", quality="low")
            job = client.jobs.get(waiting.id)
            served = read(http, waiting.id)
        assert (job.queue_position, job.estimated_start_at) == (
            served["queuePosition"],
            served["estimatedStartAt"],
        )
        assert job.queue_position == 1
        shown = CliRunner().invoke(app, ["jobs", "show", waiting.id], env=env)
        assert shown.exit_code == 0 and "#1 in queue" in shown.stdout, shown.stdout
        running = wait_until(
            lambda: (job := client.jobs.get(holders[0].id)).estimated_completion_at and job,
            30,
            "an estimated completion",
        )
        assert running.queue_position is None
        shown = CliRunner().invoke(app, ["jobs", "show", holders[0].id], env=env)
        assert shown.exit_code == 0 and "ends in about" in shown.stdout, shown.stdout
        for holder in holders:
            holder.cancel()
        assert waiting.wait().status == "completed"


def test_video_positions_are_the_lines_real_order(fresh: Service) -> None:
    """The video queue runs one job at a time; each account's videos run one after another, so
    two accounts' videos interleave: a1 b1 a2 b2 a3, whatever order they were created in."""
    first_key, second_key, third_key = (fresh.new_key(credits=100_000) for _ in range(3))
    body = {"duration": 1, "resolution": "480p", "audio": False}
    with (
        fresh.client(first_key) as first,
        fresh.client(second_key) as second,
        fresh.client(third_key) as third,
    ):
        frames = {
            client: wait_done(client, create(client, "[sleep 0] frame")["id"])["id"]
            for client in (first, second, third)
        }

        def video(client: httpx.Client, prompt: str) -> str:
            response = client.post(
                "/videos/image-to-video", json={**body, "image": frames[client], "prompt": prompt}
            )
            assert response.status_code == 202, response.text
            return str(response.json()["data"]["id"])

        holder = video(third, HOLD)
        processing(third, holder)
        a1, a2, a3 = (video(first, f"[sleep 0.3] a{n}") for n in (1, 2, 3))
        b1, b2 = (video(second, f"[sleep 0.3] b{n}") for n in (1, 2))
        expected = [a1, b1, a2, b2, a3]
        owners = {a1: first, a2: first, a3: first, b1: second, b2: second}
        jobs = {job_id: read(owners[job_id], job_id) for job_id in expected}
        assert [jobs[job_id]["queuePosition"] for job_id in expected] == [1, 2, 3, 4, 5]
        # No video completed yet in this service.
        assert all(job["estimatedStartAt"] is None for job in jobs.values())

        cancel(third, holder)
        for job_id in expected:
            assert video_done(owners[job_id], job_id)["status"] == "completed"
    started = start_times(fresh, expected)
    assert sorted(expected, key=started.__getitem__) == expected, "the real order"


def start_times(service: Service, job_ids: list[str]) -> dict[str, datetime]:
    with service.services.db.read() as session:
        rows = session.query(JobRow.id, JobRow.started_at).filter(JobRow.id.in_(job_ids)).all()
    return {row.id: row.started_at for row in rows}


def test_the_fields_are_optional_extensions_of_the_documented_job(fresh: Service) -> None:
    document = httpx.get(f"{fresh.api}/openapi.json").json()
    job = document["components"]["schemas"]["Job"]
    for field in ("queuePosition", "estimatedStartAt", "estimatedCompletionAt"):
        assert field in job["properties"] and field not in job["required"], field
        assert job["properties"][field]["description"].startswith("Extension"), field
    stream = document["paths"]["/v1/jobs/{id}/events"]["get"]["responses"]["200"]
    pattern = stream["content"]["text/event-stream"]["schema"]["properties"]["id"]["pattern"]
    assert re.fullmatch(pattern, "pending/0/12") and re.fullmatch(pattern, "processing/420")
