"""Videos through HTTP: image-to-video and frames, decoded MP4s, posters, the video line."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import av
import httpx
import pytest
from PIL import Image

from benchmarks.testkit.waits import wait_until
from core.tables import JobRow, Media
from tests.support.http_jobs import create, status_of, video_done, wait_done
from tests.support.service import Service


def mp4_facts(url: str) -> dict:
    response = httpx.get(url)
    assert response.status_code == 200
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        path.write_bytes(response.content)
        with av.open(str(path)) as container:
            video = container.streams.video[0]
            audio = container.streams.audio
            frames = sum(1 for _ in container.decode(video))
            return {
                "codec": video.codec_context.name,
                "pix_fmt": video.codec_context.pix_fmt,
                "size": (video.codec_context.width, video.codec_context.height),
                "frames": frames,
                "audio": [
                    (a.codec_context.name, a.codec_context.sample_rate, a.channels) for a in audio
                ],
            }


@pytest.fixture(scope="module")
def frames_of(service: Service) -> tuple[str, str, str]:
    """A key and two completed square images of it to animate and to join."""
    key = service.new_key(credits=5000)
    with service.client(key) as client:
        first = wait_done(client, create(client, "a calm blue sea at dawn")["id"])
        second = wait_done(client, create(client, "a calm blue sea at dusk, orange sky")["id"])
    return key, first["id"], second["id"]


def test_image_to_video_is_a_real_mp4_with_audio_and_a_poster(
    service: Service, frames_of: tuple
) -> None:
    key, image, _ = frames_of
    with service.client(key) as client:
        response = client.post(
            "/videos/image-to-video",
            json={"image": image, "prompt": "slow zoom in", "duration": 1, "resolution": "480p"},
        )
        assert response.status_code == 202, response.text
        created = response.json()["data"]
        assert created["type"] == "video.generate"
        job = video_done(client, created["id"])
        assert job["status"] == "completed", job
        video = job["result"]["video"]
        assert (video["width"], video["height"]) == (480, 480)
        assert abs(video["durationSeconds"] - 1.0) <= 1 / 24
        facts = mp4_facts(video["url"])
        assert facts["codec"] == "h264" and facts["pix_fmt"] == "yuv420p"
        assert facts["size"] == (480, 480) and facts["frames"] == 24
        assert facts["audio"] == [("aac", 48000, 2)]

        def poster() -> str | None:
            return client.get(f"/videos/{created['id']}").json()["data"]["result"]["video"][
                "thumbnailUrl"
            ]

        poster_url = wait_until(poster, 30, "the poster")
        jpeg = Image.open(io.BytesIO(httpx.get(poster_url).content))
        assert jpeg.format == "JPEG" and jpeg.size == (480, 480)
        assert client.get(f"/images/{created['id']}").status_code == 404


# A 4 s clip costs 10-20 s of CPU and its making is the same in every mode: run once, square.
@pytest.mark.parametrize("service", ["embedded"], indirect=True)
def test_frames_without_audio_has_no_audio_stream(service: Service, frames_of: tuple) -> None:
    key, start, end = frames_of
    with service.client(key) as client:
        response = client.post(
            "/videos/frames",
            json={
                "startImage": start,
                "endImage": end,
                "prompt": "the day turns to dusk",
                "duration": 4,
                "aspectRatio": "1:1",
                "resolution": "480p",
                "audio": False,
            },
        )
        assert response.status_code == 202, response.text
        job = video_done(client, response.json()["data"]["id"])
    assert job["status"] == "completed", job
    video = job["result"]["video"]
    assert (video["width"], video["height"]) == (480, 480)
    facts = mp4_facts(video["url"])
    assert facts["frames"] == 96 and facts["audio"] == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/videos/image-to-video", {"prompt": "p"}, "image"),
        ("/videos/image-to-video", {"image": "x", "prompt": "p", "duration": 0.5}, "duration"),
        ("/videos/image-to-video", {"image": "x", "prompt": "p", "duration": 15.5}, "duration"),
        (
            "/videos/image-to-video",
            {"image": "x", "prompt": "p", "resolution": "1080p"},
            "resolution",
        ),
        ("/videos/image-to-video", {"image": "x", "prompt": "p", "audio": "yes"}, "audio"),
        (
            "/videos/image-to-video",
            {"image": "x", "prompt": "p", "negativePrompt": "n" * 1001},
            "negativePrompt",
        ),
        (
            "/videos/frames",
            {"startImage": "x", "endImage": "y", "prompt": "p", "duration": 3},
            "duration",
        ),
        (
            "/videos/frames",
            {"startImage": "x", "endImage": "y", "prompt": "p", "aspectRatio": "2:1"},
            "aspectRatio",
        ),
        ("/videos/frames", {"endImage": "y", "prompt": "p"}, "startImage"),
        (
            "/videos/image-to-video",
            {"image": "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c", "prompt": "p"},
            "image",
        ),
    ],
)
def test_bad_video_requests_are_400_naming_the_field(
    service: Service, key: str, path: str, body: dict, field: str
) -> None:
    with service.client(key) as client:
        response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["details"]
    assert service.balance(key) == 1000


def test_a_free_plan_gets_subscription_required(service: Service) -> None:
    key = service.new_key(plan="free")
    with service.client(key) as client:
        own = wait_done(client, create(client, "[sleep 0] mine")["id"])
        response = client.post("/videos/image-to-video", json={"image": own["id"], "prompt": "p"})
    assert response.status_code == 402
    assert response.json()["error"]["code"] == "SUBSCRIPTION_REQUIRED"


def _times(service: Service, job_id: str) -> JobRow:
    with service.services.db.read() as session:
        job = session.get(JobRow, job_id)
        assert job is not None
        return job


def test_one_accounts_videos_run_in_order_while_others_pass(service: Service) -> None:
    first_key, other_key = service.new_key(credits=5000), service.new_key(credits=5000)
    body = {"duration": 1, "resolution": "480p", "audio": False}
    with service.client(first_key) as first, service.client(other_key) as other:
        mine = wait_done(first, create(first, "[sleep 0] frame")["id"])
        theirs = wait_done(other, create(other, "[sleep 0] frame")["id"])
        a1 = first.post(
            "/videos/image-to-video", json={**body, "image": mine["id"], "prompt": "[sleep 2] a1"}
        )
        a2 = first.post(
            "/videos/image-to-video", json={**body, "image": mine["id"], "prompt": "a2"}
        )
        a1_id = a1.json()["data"]["id"]
        wait_until(lambda: status_of(first, a1_id) == "processing", 30, "a1 started")
        b1 = other.post(
            "/videos/image-to-video", json={**body, "image": theirs["id"], "prompt": "b1"}
        )
        ids = [r.json()["data"]["id"] for r in (a1, a2, b1)]
        assert status_of(first, ids[1]) == "pending"
        for job_id, client in zip(ids, (first, first, other), strict=True):
            assert video_done(client, job_id)["status"] == "completed"
    a1_row, a2_row, b1_row = (_times(service, job_id) for job_id in ids)
    assert a1_row.finished_at is not None and a2_row.started_at is not None
    assert a2_row.started_at >= a1_row.finished_at, "one account's videos run one after another"
    assert b1_row.started_at is not None
    assert b1_row.started_at < a2_row.started_at, "another account's video passes the line"


def test_cancelling_a_running_video_leaves_nothing_and_frees_the_line(
    service: Service, frames_of: tuple
) -> None:
    key, image, _ = frames_of
    body = {"image": image, "duration": 1, "resolution": "480p"}
    with service.client(key) as client:
        running = client.post("/videos/image-to-video", json={**body, "prompt": "[sleep 5] long"})
        following = client.post("/videos/image-to-video", json={**body, "prompt": "next"})
        running_id, following_id = (r.json()["data"]["id"] for r in (running, following))
        wait_until(lambda: status_of(client, running_id) == "processing", 30, "processing")
        cancelled = client.post(f"/jobs/{running_id}/cancel").json()["data"]
        assert cancelled["status"] == "failed"
        assert video_done(client, following_id)["status"] == "completed"
        assert status_of(client, running_id) == "failed"
    with service.services.db.read() as session:
        assert session.query(Media).filter(Media.job_id == running_id).count() == 0
