"""The async client mirrors the sync one, method for method, through the real server."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from pathlib import Path

import pytest
from PIL import Image

from benchmarks.testkit.images import image_bytes
from sfumato_client import (
    AsyncClient,
    AsyncJob,
    Client,
    InsufficientCreditsError,
    Job,
    JobData,
    JobFailedError,
    JobTimeoutError,
    NotFoundError,
    ValidationError,
)
from tests.client.conftest import mp4_facts, png_size
from tests.support.service import Service

pytestmark = pytest.mark.slow


def public_methods(cls: type) -> set[str]:
    return {
        name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")
    }


def test_the_async_client_has_every_method_of_the_sync_one() -> None:
    sync = Client("http://127.0.0.1:1/v1", "k")
    asynchronous = AsyncClient("http://127.0.0.1:1/v1", "k")
    for resource in ("images", "videos", "jobs", "styles", "uploads", "account"):
        sync_type = type(getattr(sync, resource))
        async_type = type(getattr(asynchronous, resource))
        assert public_methods(sync_type) == public_methods(async_type), resource
        for name in public_methods(async_type) - {"bind"}:
            method = getattr(async_type, name)
            assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method), name
    assert public_methods(Job) == public_methods(AsyncJob)
    for name in ("wait", "download", "cancel", "refresh"):
        assert inspect.iscoroutinefunction(getattr(AsyncJob, name)), name
    sync.close()
    asyncio.run(asynchronous.close())


def test_generate_wait_download(service: Service, key: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with AsyncClient(service.api, key) as client:
            seen: list[JobData] = []
            job = await client.images.generate("[sleep 1] async", aspect_ratio="9:16")
            done = await job.wait(on_progress=seen.append)
            assert isinstance(done, AsyncJob) and done.status == "completed"
            assert done.progress == 1 and seen[-1].status == "completed"
            values = [update.progress or 0 for update in seen]
            assert values == sorted(values)
            (path,) = await done.download(tmp_path)
            assert png_size(path) == (768, 1360)
            assert (await client.images.get(job.id)).status == "completed"
            listed = [listed.id async for listed in client.jobs.list(page_size=1)]
            assert listed == [job.id]

    asyncio.run(scenario())


def test_errors_cancel_and_timeout(service: Service, key: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(service.api, key) as client:
            with pytest.raises(ValidationError) as invalid:
                await client.images.generate("")
            assert invalid.value.details and "prompt" in invalid.value.details
            with pytest.raises(NotFoundError):
                await client.jobs.get(str(uuid.uuid4()))
            with pytest.raises(JobFailedError) as failed:
                await (await client.images.generate("[fail]")).wait()
            assert failed.value.job.status == "failed"
            slow = await client.images.generate("[sleep 30] long")
            with pytest.raises(JobTimeoutError):
                await slow.wait(timeout=0.5)
            cancelled = await slow.cancel()
            assert cancelled.status == "failed" and cancelled.error is not None
            account = await client.account.get()
            assert account.plan.tier == "paid"
        async with AsyncClient(service.api, service.new_key(credits=0)) as poor:
            with pytest.raises(InsufficientCreditsError):
                await poor.images.generate("no money")

    asyncio.run(scenario())


def test_uploads_references_and_video(service: Service, key: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with AsyncClient(service.api, key) as client:
            upload = await client.uploads.upload(image_bytes((0, 0, 250), (32, 32)))
            assert (upload.width, upload.height) == (32, 32)
            reference = tmp_path / "green.png"
            reference.write_bytes(image_bytes((0, 230, 0), (32, 32)))
            echoed = await (
                await client.images.generate("[echo-reference]", references=[str(reference)])
            ).wait()
            (path,) = await echoed.download(tmp_path / "echo.png")
            with Image.open(path) as image:
                assert image.convert("RGB").getpixel((5, 5))[1] > 180  # type: ignore[index]
            clip = await client.videos.image_to_video(
                upload.id, "drift", duration=1, resolution="480p", audio=True
            )
            done = await clip.wait()
            (video,) = await done.download(tmp_path)
            assert video.suffix == ".mp4"
            assert mp4_facts(video) == (480, 480, 24, True)
            with pytest.raises(NotFoundError):
                await client.styles.get(str(uuid.uuid4()))
            assert [style async for style in client.styles.list()] == []

    asyncio.run(scenario())
