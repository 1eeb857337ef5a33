"""The diffusion pipelines on a CUDA device: what the CPU suite cannot show.

The tiny random-weight models of `models/testing.py` and `models/testing_video.py` in half
precision on the GPU: the device and dtype the cache resolves, one call per batch, a seed that
gives the same picture batched or alone, the image operations' sizes, the video models' frames,
a real CUDA out-of-memory error recognised as one, and the cache giving device memory back.

Where no CUDA device is, every test here is skipped with that reason in the summary (CI has no
GPU). On a GPU machine: `pytest tests/pipelines/test_diffusion_cuda.py`. Only the pipelines and
the models are imported (no database, broker or storage), so a GPU node with torch and
diffusers runs it without the service's other dependencies (`--noconftest` then spares it the
suite's fixtures).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from models.cache import ModelCache
from models.registry import ModelRegistry, load_registry
from models.testing import in_dtype, write_tiny_registry
from models.testing_video import build_tiny_ltx_models, build_tiny_video_models
from pipelines.base import EditInput, GenerateInput, NoControl, ReframeInput, UpscaleInput
from pipelines.diffusion.device import is_out_of_memory
from pipelines.diffusion.edit import DiffusionEdit
from pipelines.diffusion.generate import DiffusionGenerate
from pipelines.diffusion.reframe import DiffusionReframe
from pipelines.diffusion.upscale import DiffusionUpscale
from pipelines.diffusion.video_model import VideoModel, fit
from tests.support import diffusion_images

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device (run on a GPU machine)"
)

HALF_PRECISIONS = ("float16", "bfloat16")


@pytest.fixture(scope="module")
def tiny_folder() -> Path:
    """The tiny models, built once per test process (`tests/support/diffusion_images.py`)."""
    return diffusion_images.tiny_registry_path().parent


def registry_in(tiny_folder: Path, dtype: str) -> ModelRegistry:
    """The tiny models' registry with every entry loading in `dtype`."""
    return load_registry(write_tiny_registry(tiny_folder, dtype=dtype))


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float32)


def source_picture(width: int, height: int) -> Image.Image:
    """A picture with structure (gradients and a square), not a flat colour."""
    x = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    y = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    rgb = np.stack([x + 0 * y, y + 0 * x, 255 - (x + y) / 2], axis=-1)
    rgb[height // 4 : height // 2, width // 4 : width // 2] = (250, 40, 40)
    return Image.fromarray(rgb.clip(0, 255).astype(np.uint8))


@pytest.mark.parametrize("dtype", HALF_PRECISIONS)
def test_generate_batches_four_jobs_in_one_half_precision_call_on_the_gpu(
    tiny_folder: Path, dtype: str
) -> None:
    cache = ModelCache()
    assert cache.device == "cuda"
    card_gib = torch.cuda.get_device_properties(0).total_memory / 2**30
    assert cache.budget_gb == pytest.approx(0.9 * card_gib)
    pipeline = DiffusionGenerate(spec=registry_in(tiny_folder, dtype).spec("generate"), cache=cache)
    with cache.pipeline_for(pipeline.spec) as pipe:
        assert pipe.unet.device.type == "cuda"
        assert pipe.unet.dtype == getattr(torch, dtype)
        assert pipe.vae.dtype == getattr(torch, dtype)
    calls: list[int] = []
    pipeline.call_listeners.append(calls.append)
    jobs = [
        GenerateInput(
            prompt=f"a lighthouse on a cliff {index}", width=1024, height=1024, seed=index
        )
        for index in range(4)
    ]

    outputs = pipeline.run_batch(jobs, [NoControl() for _ in jobs])

    assert calls == [4], "four jobs, one diffusers call"
    batched = []
    for output in outputs:
        assert not isinstance(output, BaseException), output
        (image,) = output.images
        assert image.size == (1024, 1024)
        batched.append(pixels(image))
    for picture in batched:
        assert picture.std() > 5, "a picture, not a flat (NaN-black) one"
    assert all(np.abs(batched[0] - other).mean() > 5 for other in batched[1:])
    # The seed draws the same latents batched or alone (a generator per image, on the device):
    # the same picture up to the half-precision kernels' rounding.
    alone = pipeline.run(jobs[2], NoControl()).images[0]
    assert np.abs(pixels(alone) - batched[2]).mean() < 2.0
    assert calls == [4, 1]


def test_edit_reframe_and_upscale_make_their_sizes_on_the_gpu(tiny_folder: Path) -> None:
    registry = registry_in(tiny_folder, "float16")
    cache = ModelCache(device="cuda")
    source = source_picture(256, 256)

    edit = DiffusionEdit(spec=registry.spec("edit"), cache=cache)
    (edited,) = edit.run(EditInput(prompt="make it night", source=source), NoControl()).images
    assert edited.size == source.size

    reframe = DiffusionReframe(spec=registry.spec("reframe"), cache=cache)
    request = ReframeInput(source=source, width=1024, height=576)
    (reframed,) = reframe.run(request, NoControl()).images
    assert reframed.size == (1024, 576)

    upscale = DiffusionUpscale(spec=registry.spec("upscale"), cache=cache)
    request_up = UpscaleInput(source=source_picture(128, 96), width=512, height=384)
    (upscaled,) = upscale.run(request_up, NoControl()).images
    assert upscaled.size == (512, 384)

    for image in (edited, reframed, upscaled):
        assert pixels(image).std() > 5
    # Reframe shares generate's weights: pix2pix, sd15 and the upscaler.
    assert len(cache.loaded()) == 3, cache.loaded()


@pytest.mark.parametrize("model", ["wan", "ltx"])
def test_video_models_make_their_frames_in_half_precision_on_the_gpu(
    tmp_path: Path, model: str
) -> None:
    tables = (
        build_tiny_video_models(tmp_path) if model == "wan" else build_tiny_ltx_models(tmp_path)
    )
    file = tmp_path / "models.toml"
    file.write_text(in_dtype(tables, "bfloat16"))
    registry = load_registry(file)
    cache = ModelCache(device="cuda")
    animate = VideoModel("animate", needs=("image",), spec=registry.spec("animate"), cache=cache)
    with cache.pipeline_for(animate.spec) as pipe:
        assert pipe.transformer.device.type == "cuda"
        assert pipe.transformer.dtype == torch.bfloat16
    plan = animate.plan(1.0, 640, 360)
    frames_made = min(plan.model_frames, animate.geometry.max_frames)
    steps: list[float] = []
    start = fit(source_picture(640, 360), plan.native)

    frames = animate.generate(
        {"image": start}, "waves roll in", None, plan.native, frames_made, 7, steps.append
    )

    assert len(frames) == frames_made
    width, height = plan.native
    assert all(frame.shape == (height, width, 3) for frame in frames)
    assert steps[-1] == 1.0
    again = animate.generate(
        {"image": start}, "waves roll in", None, plan.native, frames_made, 7, lambda _: None
    )
    assert np.array_equal(np.stack(again), np.stack(frames)), "the seed reproduces the clip"
    if model == "wan":
        transition = VideoModel(
            "transition",
            needs=("image", "last_image"),
            spec=registry.spec("transition"),
            cache=cache,
        )
        with cache.pipeline_for(transition.spec) as pipe:
            assert pipe.transformer.device.type == "cuda"
            assert pipe.transformer.dtype == torch.bfloat16
        end = fit(source_picture(640, 360).transpose(Image.Transpose.ROTATE_180), plan.native)
        joined = transition.generate(
            {"image": start, "last_image": end},
            "from day to night",
            None,
            plan.native,
            frames_made,
            3,
            lambda _: None,
        )
        assert len(joined) == frames_made


def test_a_real_out_of_memory_error_is_recognised_and_released_models_free_the_card(
    tiny_folder: Path,
) -> None:
    with pytest.raises(torch.cuda.OutOfMemoryError) as caught:
        torch.empty(2**44, dtype=torch.uint8, device="cuda")  # 16 TiB
    assert is_out_of_memory(caught.value)

    registry = registry_in(tiny_folder, "float16")
    cache = ModelCache(device="cuda")
    generate = DiffusionGenerate(spec=registry.spec("generate"), cache=cache)
    DiffusionEdit(spec=registry.spec("edit"), cache=cache)
    torch.cuda.synchronize()
    with_both = torch.cuda.memory_allocated()

    cache.release_unused(generate.spec)

    assert len(cache.loaded()) == 1, cache.loaded()
    assert torch.cuda.memory_allocated() < with_both
    (image,) = generate.run(
        GenerateInput(prompt="still here", width=512, height=512), NoControl()
    ).images
    assert image.size == (512, 512)


def test_weights_load_straight_onto_the_gpu_in_their_dtype_timed_per_component(
    tiny_folder: Path,
) -> None:
    from models.loading import load_pipeline_timed

    spec = registry_in(tiny_folder, "float16").spec("generate")
    pipe, times = load_pipeline_timed(spec, "cuda")
    assert set(times.components) == {"unet", "vae", "text_encoder"}
    for name in times.components:
        weights = next(getattr(pipe, name).parameters())
        assert weights.device.type == "cuda" and weights.dtype == torch.float16, name
