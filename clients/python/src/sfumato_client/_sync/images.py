# Generated from sfumato_client/_async/images.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""Images: generate, edit, resize (reframe), upscale, read."""

from __future__ import annotations

from collections.abc import Sequence

from sfumato_client._files import FileInput
from sfumato_client._sync.creates import Creates
from sfumato_client._sync.jobs import Job
from sfumato_client.models import (
    Adapter,
    EditRequest,
    GenerateRequest,
    ResizeRequest,
    UpscaleRequest,
    Webhook,
)

# A LoRA adapter by name (scale 1), or (name, scale).
AdapterInput = str | tuple[str, float]


def _adapters(loras: Sequence[AdapterInput] | None) -> list[Adapter] | None:
    if loras is None:
        return None
    return [
        Adapter(name=lora) if isinstance(lora, str) else Adapter(name=lora[0], scale=lora[1])
        for lora in loras
    ]


class Images(Creates):
    def generate(
        self,
        prompt: str,
        *,
        aspect_ratio: str | None = None,
        quality: str | None = None,
        resolution: str | None = None,
        style_id: str | None = None,
        references: Sequence[FileInput] | None = None,
        variations: int | None = None,
        seed: int | None = None,
        negative_prompt: str | None = None,
        steps: int | None = None,
        guidance: float | None = None,
        model: str | None = None,
        loras: Sequence[AdapterInput] | None = None,
        webhook: Webhook | None = None,
    ) -> Job:
        """Starts a generation; local files among `references` are uploaded first. Unset
        options take the server's defaults (1:1, medium, 1K, one variation, a random seed, the
        operation's default model at the quality's steps). `client.models.list()` says which
        models, steps, guidance and LoRA adapters the server takes."""
        body = GenerateRequest(
            prompt=prompt,
            aspect_ratio=aspect_ratio,
            quality=quality,
            resolution=resolution,
            style_id=style_id,
            references=self._uploads.resolve_all(references),
            variations=variations,
            seed=seed,
            negative_prompt=negative_prompt,
            steps=steps,
            guidance=guidance,
            model=model,
            loras=_adapters(loras),
            webhook=webhook,
        )
        return self._create("/images/generate", body)

    def edit(
        self,
        image_id: str,
        prompt: str,
        *,
        references: Sequence[FileInput] | None = None,
        style_id: str | None = None,
        seed: int | None = None,
        negative_prompt: str | None = None,
        steps: int | None = None,
        guidance: float | None = None,
        model: str | None = None,
        loras: Sequence[AdapterInput] | None = None,
        mask: FileInput | None = None,
        webhook: Webhook | None = None,
    ) -> Job:
        """Edits a prior image (a job id or one of its image ids): a new job. With `mask` (a
        local file is uploaded first; the image's size, white = change) only that area
        changes."""
        body = EditRequest(
            image_id=image_id,
            prompt=prompt,
            style_id=style_id,
            references=self._uploads.resolve_all(references),
            seed=seed,
            negative_prompt=negative_prompt,
            steps=steps,
            guidance=guidance,
            model=model,
            loras=_adapters(loras),
            mask=None if mask is None else self._uploads.resolve(mask),
            webhook=webhook,
        )
        return self._create("/images/edit", body)

    def resize(
        self,
        image_id: str,
        aspect_ratio: str,
        resolution: str | None = None,
        *,
        seed: int | None = None,
        webhook: Webhook | None = None,
    ) -> Job:
        """Reframes a prior image to another aspect ratio (reported as `image.edit`)."""
        body = ResizeRequest(
            image_id=image_id,
            aspect_ratio=aspect_ratio,
            resolution=resolution,
            seed=seed,
            webhook=webhook,
        )
        return self._create("/images/resize", body)

    def upscale(
        self,
        image_id: str,
        resolution: str,
        *,
        seed: int | None = None,
        webhook: Webhook | None = None,
    ) -> Job:
        body = UpscaleRequest(image_id=image_id, resolution=resolution, seed=seed, webhook=webhook)
        return self._create("/images/upscale", body)

    def get(self, job_id: str, *, wait: bool = False) -> Job:
        """An image job (`GET /images/{id}`); `wait=True` long-polls."""
        return self._read(f"/images/{job_id}", wait)
