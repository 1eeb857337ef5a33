"""Compiled pipelines on the CPU with the tiny models: the registry's `tuning` table compiles the
UNet at warm-up, for the warm-up shapes only; a job of a warmed shape runs the compiled code and
makes the eager pipeline's picture within a stated tolerance, and a job of any other shape runs
eagerly (nothing compiles inside a job)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from models.cache import ModelCache
from models.registry import ModelSpec, load_registry
from models.tuning import Tuning, compiled_shapes
from pipelines.base import GenerateInput, NoControl
from pipelines.diffusion.generate import TEXT_TO_IMAGE, DiffusionGenerate
from tests.support.diffusion_images import tiny_registry_path
from workers.warm_up import warm_up

pytestmark = pytest.mark.slow

# Compiled kernels reorder float32 sums: pixels may differ by rounding, never by a picture.
MEAN_TOLERANCE = 1.0  # of 255, averaged over the image
MAX_TOLERANCE = 8  # of 255, any one pixel


def _tuned(spec: ModelSpec) -> ModelSpec:
    tuning = Tuning(compile="denoiser", channels_last=True, fuse_qkv=True, cpu=True)
    return spec.model_copy(update={"tuning": tuning, "batch_limit": 1})


class OnePipeline:
    """A registry of one pipeline, as the worker's warm-up sees it."""

    def __init__(self, pipeline: DiffusionGenerate) -> None:
        self.pipeline = pipeline

    def operations(self) -> list[str]:
        return ["generate"]

    def get(self, operation: str) -> DiffusionGenerate:
        return self.pipeline


@pytest.mark.timeout(900)
def test_compiled_at_warm_up_equals_eager_and_other_shapes_run_eagerly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = load_registry(tiny_registry_path()).spec("generate")
    eager = DiffusionGenerate(spec, ModelCache(device="cpu"))
    compiled = DiffusionGenerate(_tuned(spec), ModelCache(device="cpu"))

    with caplog.at_level(logging.INFO):
        warm_up(OnePipeline(compiled), ["image"])  # type: ignore[arg-type]
    said = caplog.text
    assert "compiled UNet2DConditionModel for 1:1 (low quality) at batch 1 in" in said
    assert "generate warmed up in" in said
    with compiled.cache.pipeline_for(compiled.spec, TEXT_TO_IMAGE) as pipe:
        (shapes,) = compiled_shapes(pipe)
        assert pipe.unet.conv_in.weight.is_contiguous(memory_format=torch.channels_last)
    warmed = set(shapes.ready)
    assert len(warmed) == 1, "one shape: the 1:1 native size at batch 1 (CFG doubles it)"

    job = GenerateInput(prompt="a lighthouse", width=64, height=64, quality="medium", seed=11)
    fast = compiled.run(job, NoControl()).images[0]
    slow = eager.run(job, NoControl()).images[0]
    difference = np.abs(np.asarray(fast, np.int16) - np.asarray(slow, np.int16))
    assert difference.mean() < MEAN_TOLERANCE and difference.max() <= MAX_TOLERANCE
    assert shapes.eager_calls == 0 and shapes.ready == warmed

    wide = GenerateInput(prompt="a lighthouse", width=128, height=64, seed=11)
    compiled.run(wide, NoControl())
    assert shapes.eager_calls > 0, "a shape not warmed up runs eagerly"
    assert shapes.ready == warmed, "and is not compiled inside the job"
