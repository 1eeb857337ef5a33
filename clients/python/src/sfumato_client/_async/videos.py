"""Videos: animate one image, or a transition between two frames; read."""

from __future__ import annotations

from sfumato_client._async.creates import AsyncCreates
from sfumato_client._async.jobs import AsyncJob
from sfumato_client._files import FileInput
from sfumato_client.models import FramesRequest, ImageToVideoRequest, Webhook


class AsyncVideos(AsyncCreates):
    async def image_to_video(
        self,
        image: FileInput,
        prompt: str,
        *,
        duration: float | None = None,
        resolution: str | None = None,
        audio: bool | None = None,
        negative_prompt: str | None = None,
        seed: int | None = None,
        webhook: Webhook | None = None,
    ) -> AsyncJob:
        """Animates one image (a local file is uploaded first); the clip takes its ratio."""
        body = ImageToVideoRequest(
            image=await self._uploads.resolve(image),
            prompt=prompt,
            duration=duration,
            resolution=resolution,
            audio=audio,
            negative_prompt=negative_prompt,
            seed=seed,
            webhook=webhook,
        )
        return await self._create("/videos/image-to-video", body)

    async def frames(
        self,
        start_image: FileInput,
        end_image: FileInput,
        prompt: str,
        *,
        duration: float | None = None,
        aspect_ratio: str | None = None,
        resolution: str | None = None,
        audio: bool | None = None,
        negative_prompt: str | None = None,
        seed: int | None = None,
        webhook: Webhook | None = None,
    ) -> AsyncJob:
        """A transition from `start_image` to `end_image` (local files uploaded first)."""
        body = FramesRequest(
            start_image=await self._uploads.resolve(start_image),
            end_image=await self._uploads.resolve(end_image),
            prompt=prompt,
            duration=duration,
            aspect_ratio=aspect_ratio,
            resolution=resolution,
            audio=audio,
            negative_prompt=negative_prompt,
            seed=seed,
            webhook=webhook,
        )
        return await self._create("/videos/frames", body)

    async def get(self, job_id: str, *, wait: bool = False) -> AsyncJob:
        return await self._read(f"/videos/{job_id}", wait)
