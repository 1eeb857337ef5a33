"""Progress on job reads and the job's Server-Sent Events stream, through a real server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from core.events import job_events_for
from core.events.redis_bus import RedisJobEvents
from tests.conftest import embedded_mode
from tests.support.http_jobs import create, wait_done
from tests.support.job_events import Event, events_of, sse_lines, stream
from tests.support.service import Service, running_service


def test_progress_rises_on_reads_of_a_slow_job_and_is_1_when_completed(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        created = create(client, "[sleep 3] a slow lighthouse", quality="low")
        assert set(created) == {"id", "type", "status", "createdAt"}  # creates stay as they were
        seen: list[tuple[str, float]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            job = client.get(f"/jobs/{created['id']}").json()["data"]
            seen.append((job["status"], job["progress"]))
            if job["status"] == "completed":
                break
            time.sleep(0.1)
        progress = [value for _, value in seen]
        assert progress == sorted(progress), seen  # never decreasing
        running = {value for status, value in seen if status == "processing" and 0 < value < 1}
        assert len(running) >= 2, seen  # seen moving while the job ran, not only at its end
        assert seen[-1] == ("completed", 1.0)
        for path in (f"/images/{created['id']}", f"/jobs/{created['id']}"):
            assert client.get(path).json()["data"]["progress"] == 1.0
        listed = client.get("/jobs").json()["data"]
        assert [job["progress"] for job in listed if job["id"] == created["id"]] == [1.0]


def test_a_failed_job_keeps_the_progress_it_reached(service: Service, key: str) -> None:
    with service.client(key) as client:
        job = wait_done(client, create(client, "[fail] at once")["id"])
        assert job["status"] == "failed"
        assert 0 <= job["progress"] < 1


def test_the_event_stream_follows_a_job_to_its_end_and_closes(service: Service, key: str) -> None:
    with service.client(key) as client:
        created = create(client, "[sleep 2.5] a streamed harbour", quality="low")
        comments: list[str] = []
        with stream(client, created["id"]) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert "x-ratelimit-remaining" in response.headers  # counted once, like any request
            events = list(events_of(sse_lines(response), comments))
        assert events[0].job["id"] == created["id"]
        assert events[-1].job["status"] == "completed"
        assert events[-1].job == client.get(f"/jobs/{created['id']}").json()["data"]
        progress = [event.job["progress"] for event in events]
        assert progress == sorted(progress)
        assert len({p for p in progress if 0 < p < 1}) >= 2, progress
        ids = [event.id for event in events]
        assert len(set(ids)) == len(ids) and all(ids), ids  # each event a new state
        assert events[-1].id == "completed/1000"
        # The test deployment beats every 0.3 s (SFUMATO_EVENTS_HEARTBEAT_SECONDS), and
        # progress moves about once a second.
        assert ": heartbeat" in comments


def test_last_event_id_resumes_after_the_state_the_client_saw(service: Service, key: str) -> None:
    with service.client(key) as client:
        created = create(client, "[sleep 2] a resumed stream", quality="low")
        with stream(client, created["id"]) as response:
            first = next(events_of(sse_lines(response)))
        assert first.id is not None
        with stream(client, created["id"], last_event_id=first.id) as response:
            resumed = list(events_of(sse_lines(response)))
        assert resumed and resumed[0].id != first.id  # the state already seen is not sent again
        assert resumed[-1].job["status"] == "completed"
        # Reconnecting after the terminal event: 204, which tells EventSource to stop.
        with stream(client, created["id"], last_event_id=resumed[-1].id) as response:
            assert response.status_code == 204
            assert response.read() == b""
        # An id from before the end: the terminal job at once, then the end.
        with stream(client, created["id"], last_event_id=first.id) as response:
            late = list(events_of(sse_lines(response)))
        assert [event.id for event in late] == ["completed/1000"]


def test_the_event_stream_is_authenticated_and_private(service: Service, key: str) -> None:
    with service.client(key) as client:
        job_id = create(client, "[sleep 0.2] mine")["id"]
    with service.client(service.new_key()) as stranger:
        for path in (f"/jobs/{job_id}/events", "/jobs/00000000-0000-4000-8000-000000000000/events"):
            answer = stranger.get(path)
            assert answer.status_code == 404
            assert answer.json()["error"]["code"] == "NOT_FOUND"
    with service.client() as anonymous:
        answer = anonymous.get(f"/jobs/{job_id}/events")
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == "UNAUTHORIZED"


def test_a_server_shutdown_ends_open_streams(tmp_path: Path) -> None:
    events: list[Event] = []
    ended = threading.Event()
    with running_service(embedded_mode(), tmp_path) as service:
        key = service.new_key()
        with service.client(key) as client:
            job_id = create(client, "[sleep 30] outlives the server", quality="low")["id"]
        follower_client = service.client(key)

        def follow() -> None:
            with stream(follower_client, job_id) as response:
                events.extend(events_of(sse_lines(response)))
            ended.set()

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        deadline = time.monotonic() + 30
        while not events and time.monotonic() < deadline:
            time.sleep(0.05)
        assert events
        stopping = time.monotonic()
    # uvicorn waits for open responses before it stops (forever, with no graceful timeout, as
    # here): it stopped, so the stream ended first, as a complete response.
    assert ended.wait(5)
    follower_client.close()
    assert time.monotonic() - stopping < 25
    assert events[-1].job["status"] in ("pending", "processing")
    # The in-process workers' shutdown put the process's default socket timeout back.
    assert socket.getdefaulttimeout() is None


@pytest.mark.parametrize("header", ["x" * 65])
def test_an_overlong_last_event_id_is_refused(service: Service, key: str, header: str) -> None:
    with service.client(key) as client:
        job_id = create(client, "[sleep 0.2] short")["id"]
        answer = client.get(f"/jobs/{job_id}/events", headers={"Last-Event-ID": header})
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "VALIDATION_ERROR"


def test_progress_events_cross_replicas_over_redis_and_wake_only_streams(redis_url: str) -> None:
    """Two gateways' event buses on one Redis: a progress event or a job's start published on
    one wakes a stream's subscription on the other, but not a long-poll's (it waits for the
    job's end); a state event wakes both."""

    async def scenario() -> None:
        namespace = f"test-{uuid.uuid4().hex[:8]}"
        publisher = job_events_for(redis_url, namespace)
        replica = job_events_for(redis_url, namespace)
        assert isinstance(replica, RedisJobEvents)
        await replica.start()
        try:
            await asyncio.wait_for(replica.subscribed.wait(), 10)
            job_id, later_job_id = str(uuid.uuid4()), str(uuid.uuid4())
            async with (
                replica.subscribe(job_id, progress=True) as stream_woken,
                replica.subscribe(job_id) as long_poll_woken,
                replica.subscribe(later_job_id) as later_woken,
            ):
                publisher.publish_progress(job_id)
                publisher.publish_started(job_id)
                # One channel, one publisher: the replica reads the events in the order they
                # were sent, so once a later one woke its waiter, the progress event has been
                # seen by every subscription it could wake.
                publisher.publish(later_job_id)
                await asyncio.wait_for(stream_woken.wait(), 5)
                await asyncio.wait_for(later_woken.wait(), 5)
                assert not long_poll_woken.is_set()
                stream_woken.clear()
                publisher.publish(job_id)
                await asyncio.wait_for(long_poll_woken.wait(), 5)
                await asyncio.wait_for(stream_woken.wait(), 5)
        finally:
            await replica.stop()

    asyncio.run(scenario())
