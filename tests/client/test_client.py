"""The sync client through a real server: generations to files, progress, every error class,
uploads and references, the job list, cancel, waits, videos, styles and the account."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from PIL import Image

from benchmarks.testkit.images import image_bytes
from sfumato_client import (
    AuthenticationError,
    Client,
    InsufficientCreditsError,
    JobFailedError,
    JobTimeoutError,
    NotFoundError,
    ValidationError,
)
from sfumato_client.models import JobData
from tests.client.conftest import mp4_facts, png_size
from tests.support.service import Service

pytestmark = pytest.mark.slow


def test_generate_waits_and_downloads_real_pngs(client: Client, tmp_path: Path) -> None:
    job = client.images.generate("[sleep 0.2] two lighthouses", aspect_ratio="16:9", variations=2)
    assert job.status == "pending" and job.type == "image.generate"
    done = job.wait()
    assert done.id == job.id and done.status == "completed" and done.progress == 1
    assert done.result is not None and done.result.images is not None
    assert len(done.result.images) == 2
    paths = done.download(tmp_path / "out")
    assert [path.name for path in paths] == [f"{image.id}.png" for image in done.result.images]
    assert [png_size(path) for path in paths] == [(1360, 768), (1360, 768)]
    named = done.download(tmp_path / "lighthouse.png")
    assert [path.name for path in named] == ["lighthouse-1.png", "lighthouse-2.png"]
    assert client.images.get(job.id).status == "completed"


def test_progress_rises_to_one_on_a_slow_job(client: Client) -> None:
    seen: list[JobData] = []
    done = client.images.generate("[sleep 2.5] slowly").wait(on_progress=seen.append)
    values = [job.progress for job in seen]
    assert all(value is not None for value in values), values
    assert values == sorted(values), f"progress went down: {values}"  # type: ignore[type-var]
    assert values[-1] == 1 and done.progress == 1
    # Seen in between, not only at the ends: the bar really moves.
    assert any(0 < value < 1 for value in values if value is not None), values
    assert seen[0].status in ("pending", "processing") and seen[-1].status == "completed"


def test_a_failed_job_raises_with_the_job_attached(client: Client) -> None:
    job = client.images.generate("[fail] on purpose")
    with pytest.raises(JobFailedError) as raised:
        job.wait()
    assert raised.value.job.id == job.id and raised.value.job.status == "failed"
    assert raised.value.code == "GENERATION_FAILED" and raised.value.message


def test_the_servers_400_is_a_validation_error_with_details(client: Client) -> None:
    with pytest.raises(ValidationError) as raised:
        client.images.generate("x", variations=9, aspect_ratio="7:3")
    error = raised.value
    assert error.status == 400 and error.code == "VALIDATION_ERROR"
    assert error.details is not None and {"variations", "aspectRatio"} <= set(error.details)


def test_error_classes_per_code(service: Service, client: Client) -> None:
    with (
        Client(service.api, "sfm_not_a_key") as stranger,
        pytest.raises(AuthenticationError) as raised,
    ):
        stranger.account.get()
    assert raised.value.status == 401 and raised.value.message == "Invalid API key"
    with pytest.raises(NotFoundError):
        client.jobs.get(str(uuid.uuid4()))
    with (
        Client(service.api, service.new_key(credits=0)) as poor,
        pytest.raises(InsufficientCreditsError) as short,
    ):
        poor.images.generate("no money")
    assert short.value.credits_available == 0
    assert short.value.credits_required is not None and short.value.credits_required > 0


def test_environment_supplies_url_and_key(
    service: Service, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SFUMATO_API_URL", service.api)
    monkeypatch.setenv("SFUMATO_API_KEY", key)
    with Client() as client:
        account = client.account.get()
    assert account.email.endswith("@test.local") and account.plan.id == "pro"
    assert account.user_id


def test_uploads_and_local_references(client: Client, tmp_path: Path) -> None:
    from_bytes = client.uploads.upload(image_bytes((10, 200, 30), (40, 30)))
    assert (from_bytes.width, from_bytes.height, from_bytes.content_type) == (40, 30, "image/png")
    reference = tmp_path / "red.jpg"
    reference.write_bytes(image_bytes((220, 20, 20), (64, 48), format="JPEG"))
    from_path = client.uploads.upload(reference)
    assert from_path.content_type == "image/jpeg" and from_path.url.startswith("http")
    # A local path among references is uploaded first: its pixels reach the pipeline.
    done = client.images.generate("[echo-reference]", references=[reference]).wait()
    (path,) = done.download(tmp_path)
    with Image.open(path) as echoed:
        red, green, blue = echoed.convert("RGB").getpixel((10, 10))  # type: ignore[misc]
    assert red > 180 and green < 60 and blue < 60
    # An id is sent as it is.
    assert client.images.generate("[echo-reference]", references=[from_bytes.id]).wait()


def test_edit_resize_and_upscale_a_prior_image(client: Client, tmp_path: Path) -> None:
    first = client.images.generate("a small red square on white").wait()
    assert first.result is not None and first.result.images
    reframed = client.images.resize(first.result.images[0].id, "16:9").wait()
    assert reframed.type == "image.edit"
    assert png_size(reframed.download(tmp_path)[0]) == (1360, 768)
    edited = client.images.edit(first.id, "make it blue").wait()
    assert edited.type == "image.edit" and png_size(edited.download(tmp_path)[0]) == (1024, 1024)
    upscaled = client.images.upscale(first.id, "1K").wait()
    assert upscaled.result is not None and upscaled.result.images
    assert (upscaled.result.images[0].width, upscaled.result.images[0].height) == (1024, 1024)


def test_list_follows_the_cursor(service: Service) -> None:
    with Client(service.api, service.new_key()) as client:
        created = [client.images.generate(f"[sleep 0.1] {n}").id for n in range(5)]
        listed = [job.id for job in client.jobs.list(page_size=2)]
        assert listed == created[::-1]
        assert [job.id for job in client.jobs.list(limit=3, page_size=2)] == created[:1:-1]
        for job_id in created:
            client.jobs.wait(job_id)
        assert len(list(client.jobs.list(status="completed"))) == 5
        assert list(client.jobs.list(status="failed")) == []


def test_cancel_and_wait_timeout(client: Client) -> None:
    job = client.images.generate("[sleep 30] long")
    with pytest.raises(JobTimeoutError) as timed_out:
        job.wait(timeout=0.5)
    assert timed_out.value.job.id == job.id and not timed_out.value.job.is_terminal
    cancelled = job.cancel()
    assert cancelled.status == "failed" and cancelled.error is not None
    assert cancelled.error.message == "Job cancelled"
    with pytest.raises(JobFailedError):
        job.wait(timeout=10)


def test_image_to_video_from_a_local_file_downloads_a_real_mp4(
    client: Client, tmp_path: Path
) -> None:
    still = tmp_path / "still.png"
    Image.new("RGB", (320, 180), (30, 120, 200)).save(still)
    job = client.videos.image_to_video(
        still, "slow zoom", duration=1, resolution="480p", audio=False
    )
    assert job.type == "video.generate"
    done = job.wait()
    assert done.result is not None and done.result.video is not None
    assert done.result.video.duration_seconds == pytest.approx(1, abs=0.1)
    (path,) = done.download(tmp_path / "clip.mp4")
    assert path == tmp_path / "clip.mp4"
    assert mp4_facts(path) == (848, 480, 24, False)
    assert client.videos.get(job.id).result is not None


def test_styles_reads(client: Client) -> None:
    assert list(client.styles.list()) == []
    with pytest.raises(NotFoundError):
        client.styles.get(str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        client.styles.search(str(uuid.uuid4()), "logo")
