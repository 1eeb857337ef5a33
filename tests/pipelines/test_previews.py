"""Live previews: latents to a small picture with each family's published factors, the diffusion
pipelines showing them while they denoise (tiny models on the CPU), and the worker's publisher,
which drops previews rather than queue them and deletes them when the job ends."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from models.cache import ModelCache
from models.registry import load_registry
from models.testing_video import build_tiny_video_models
from pipelines.base import GenerateInput, ImageOutput, ReframeInput
from pipelines.diffusion.generate import DiffusionGenerate
from pipelines.diffusion.latent_factors import FACTORS_OF_FAMILY, SD15
from pipelines.diffusion.previews import PREVIEW_SIDE, factors_for, latent_preview
from pipelines.diffusion.video_model import VideoModel
from tests.support.diffusion_images import tiny_registry_path
from tests.support.service import wait_until
from workers.previews import PreviewPublisher


class PreviewingControl:
    """A control that wants a preview at every step and keeps them."""

    def __init__(self) -> None:
        self.fractions: list[float] = []
        self.previews: list[Image.Image] = []

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.fractions.append(fraction)

    def wants_preview(self) -> bool:
        return True

    def preview(self, image: Image.Image) -> None:
        self.previews.append(image)


def test_one_latent_channel_shows_its_published_colour() -> None:
    latents = torch.zeros(4, 8, 8)
    latents[0] = 1.0  # SD 1.x's first channel alone: its row of factors is the colour
    pixel = np.asarray(latent_preview(latents, SD15))[100, 100]
    expected = [(value + 1) * 127.5 for value in SD15.rows[0]]
    assert np.allclose(pixel, expected, atol=1.5)


@pytest.mark.parametrize("family", sorted(FACTORS_OF_FAMILY))
def test_every_family_makes_a_preview_of_at_most_256_px_in_the_image_aspect(family: str) -> None:
    factors = FACTORS_OF_FAMILY[family]
    channels = factors.channels
    if family == "flux":  # 16 channels packed 2x2 into tokens of 64 (12 x 16 latents)
        latents, frames = torch.randn(6 * 8, channels * 4), 1
    elif family == "ltx":  # 128 channels, tokens frame after frame (3 frames of 12 x 16)
        latents, frames = torch.randn(3 * 12 * 16, channels), 3
    elif family == "wan":  # (channels, frames, height, width)
        latents, frames = torch.randn(channels, 5, 12, 16), 1
    else:
        latents, frames = torch.randn(channels, 12, 16), 1
    image = latent_preview(latents, factors, aspect=16 / 12, frames=frames)
    assert image.mode == "RGB"
    assert max(image.size) == PREVIEW_SIDE
    assert image.size == (256, 192)


def test_flux_tokens_unpack_to_the_latents_diffusers_packed() -> None:
    from diffusers import FluxPipeline

    latents = torch.randn(1, 16, 12, 16)
    packed = FluxPipeline._pack_latents(latents, 1, 16, 12, 16)[0]
    direct = latent_preview(latents[0], FACTORS_OF_FAMILY["flux"])
    unpacked = latent_preview(packed, FACTORS_OF_FAMILY["flux"], aspect=16 / 12)
    assert np.array_equal(np.asarray(direct), np.asarray(unpacked))


def test_ltx_tokens_show_the_middle_frame() -> None:
    from diffusers import LTXPipeline

    latents = torch.randn(1, 128, 3, 6, 8)
    packed = LTXPipeline._pack_latents(latents, 1, 1)[0]
    middle = latent_preview(latents[0, :, 1], FACTORS_OF_FAMILY["ltx"])
    unpacked = latent_preview(packed, FACTORS_OF_FAMILY["ltx"], aspect=8 / 6, frames=3)
    assert np.array_equal(np.asarray(middle), np.asarray(unpacked))


def test_video_models_registered_as_other_find_their_factors_by_class() -> None:
    assert factors_for("other", "WanImageToVideoPipeline") is FACTORS_OF_FAMILY["wan"]
    assert factors_for("other", "LTXConditionPipeline") is FACTORS_OF_FAMILY["ltx"]
    assert factors_for("other", "SomethingElse") is None


@pytest.fixture(scope="module")
def generate() -> DiffusionGenerate:
    spec = load_registry(tiny_registry_path()).spec("generate")
    return DiffusionGenerate(spec, ModelCache(device="cpu"))


def test_each_job_of_a_batch_is_shown_its_own_picture_as_it_denoises(
    generate: DiffusionGenerate,
) -> None:
    jobs = [
        GenerateInput(prompt="a quiet harbour", width=64, height=64, quality="high", seed=seed)
        for seed in (1, 2)
    ]
    controls = [PreviewingControl(), PreviewingControl()]
    outputs = generate.run_batch(jobs, controls)
    assert all(isinstance(output, ImageOutput) for output in outputs)
    steps = 12  # the tiny registry's high quality
    for control in controls:
        assert len(control.previews) == steps
        assert all(preview.size == (256, 256) for preview in control.previews)
        first, last = (np.asarray(control.previews[i], np.int16) for i in (0, -1))
        assert np.abs(first - last).mean() > 1, "the picture changes as it denoises"
    mine, theirs = (np.asarray(control.previews[-1], np.int16) for control in controls)
    assert np.abs(mine - theirs).mean() > 1, "each job its own seed, its own preview"


# --- the worker's publisher ------------------------------------------------------------------


@dataclass
class SlowStorage:
    """A store whose writes wait for `release`, so a test can hold one in flight."""

    files: dict[str, bytes] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    writing: threading.Event = field(default_factory=threading.Event)

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        assert content_type == "image/jpeg"
        self.writing.set()
        assert self.release.wait(10)
        self.files[key] = data

    def delete(self, key: str) -> None:
        self.files.pop(key, None)

    def keys_under(self, prefix: str) -> list[str]:
        return [key for key in self.files if key.startswith(prefix)]


class RecordingLifecycle:
    """What the publisher asks of the job lifecycle, recorded; `running` is the job's claim."""

    def __init__(self, storage: SlowStorage) -> None:
        self.services: Any = type("Services", (), {"storage": storage})()
        self.shown: list[str] = []
        self.running = True
        self.changed = threading.Condition()

    def show_preview(self, claim: Any, key: str) -> bool:
        with self.changed:
            if self.running:
                self.shown.append(key)
            self.changed.notify_all()
            return self.running

    def clear_previews(self, job: Any) -> None:
        storage = self.services.storage
        for key in storage.keys_under(f"previews/{job.id}/"):
            storage.delete(key)


def _claim(job_id: str) -> Any:
    job = type("Job", (), {"id": job_id})()
    return type("Claim", (), {"job": job, "token": "t"})()


def test_a_slow_store_drops_previews_rather_than_queue_them() -> None:
    storage = SlowStorage()
    lifecycle = RecordingLifecycle(storage)
    publisher = PreviewPublisher(lifecycle, interval_seconds=0.0)  # type: ignore[arg-type]
    claim = _claim("job-1")
    publisher.start(claim)
    picture = Image.new("RGB", (512, 384), (200, 30, 30))
    publisher.offer("job-1", picture)
    assert storage.writing.wait(10)
    # The first is being written: no preview is wanted, and any offered replaces the last.
    assert not publisher.wants("job-1")
    for shade in range(5):
        publisher.offer("job-1", Image.new("RGB", (64, 64), (shade, 0, 0)))
    assert publisher.dropped == 4
    storage.release.set()
    with lifecycle.changed:
        assert lifecycle.changed.wait_for(lambda: len(lifecycle.shown) == 2, 10)
    assert lifecycle.shown == ["previews/job-1/0.jpg", "previews/job-1/1.jpg"]
    wait_until(
        lambda: list(storage.files) == ["previews/job-1/1.jpg"], 10, "the replaced one deleted"
    )
    stored = Image.open(io.BytesIO(storage.files["previews/job-1/1.jpg"]))
    assert stored.format == "JPEG" and stored.size == (64, 64)

    lifecycle.running = False
    publisher.finish(claim.job)
    assert storage.files == {}, "a finished job's previews are deleted"
    publisher.offer("job-1", picture)
    assert not publisher.wants("job-1") and storage.files == {}


def test_a_preview_is_at_most_256_px() -> None:
    storage = SlowStorage()
    storage.release.set()
    lifecycle = RecordingLifecycle(storage)
    publisher = PreviewPublisher(lifecycle, interval_seconds=0.0)  # type: ignore[arg-type]
    publisher.start(_claim("job-2"))
    publisher.offer("job-2", Image.new("RGB", (1024, 576)))
    with lifecycle.changed:
        assert lifecycle.changed.wait_for(lambda: lifecycle.shown, 10)
    stored = Image.open(io.BytesIO(storage.files[lifecycle.shown[0]]))
    assert stored.size == (256, 144)


def test_the_builtin_pipelines_show_their_intermediate_stages() -> None:
    from pipelines.builtin.generate import BuiltinGenerate
    from pipelines.builtin.reframe import BuiltinReframe

    painting = PreviewingControl()
    output = BuiltinGenerate().run(
        GenerateInput(prompt="a red bicycle by a lake", width=192, height=128, quality="low"),
        painting,
    )
    # The painted scene before its subject is drawn: the picture's size, not yet the picture.
    assert painting.previews[0].size == (192, 128)
    assert painting.previews[0].tobytes() != output.images[0].tobytes()

    reframing = PreviewingControl()
    source = Image.new("RGB", (96, 96), (30, 120, 200))
    BuiltinReframe().run(ReframeInput(source=source, width=192, height=96), reframing)
    assert len(reframing.previews) == 2  # the source placed, then the new area extended


def test_latents_of_another_format_get_no_preview_rather_than_a_wrong_one(
    tmp_path: Path,
) -> None:
    assert latent_preview(torch.randn(8, 6, 6), SD15) is None
    assert latent_preview(torch.randn(24, 60), FACTORS_OF_FAMILY["flux"]) is None
    # The tiny Wan model's VAE has 4 channels, not Wan's 16: its jobs run, without previews.
    registry = tmp_path / "models.toml"
    registry.write_text(build_tiny_video_models(tmp_path))
    model = VideoModel("animate", spec=load_registry(registry).spec("animate"))
    plan = model.plan(0.3, 64, 64)
    control = PreviewingControl()
    frames = model.generate(
        {"image": Image.new("RGB", plan.native, (90, 40, 10))},
        "a lantern swinging",
        None,
        plan.native,
        plan.model_frames,
        3,
        control.progress,
        previews=control,
    )
    assert len(frames) == plan.model_frames and control.previews == []
