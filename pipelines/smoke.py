"""One small job of an operation through its diffusion pipeline (`sfumato models check
--smoke`): proves a registry entry loads on this device and runs end to end, at the smallest
size the contract allows, one second of video, at the entry's own steps."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from PIL import Image

from models.cache import ModelCache
from models.registry import ModelSpec
from pipelines.base import (
    AnimateInput,
    EditInput,
    GenerateInput,
    NoControl,
    ReframeInput,
    TransitionInput,
    UpscaleInput,
)

SIDE = 256


def smoke_test(spec: ModelSpec, cache: ModelCache) -> str:
    """Run one job of `spec.operation` on `cache`'s device; what it made and how long it took."""
    from pipelines.diffusion.animate import DiffusionAnimate
    from pipelines.diffusion.edit import DiffusionEdit
    from pipelines.diffusion.generate import DiffusionGenerate
    from pipelines.diffusion.reframe import DiffusionReframe
    from pipelines.diffusion.transition import DiffusionTransition
    from pipelines.diffusion.upscale import DiffusionUpscale
    from pipelines.diffusion.video_model import VideoModel

    started = time.perf_counter()
    picture = Image.new("RGB", (SIDE, SIDE), (90, 120, 200))
    control = NoControl()
    made: str
    if spec.operation == "generate":
        output = DiffusionGenerate(spec, cache).run(
            GenerateInput(prompt="a lighthouse", width=SIDE, height=SIDE), control
        )
        made = f"{len(output.images)} image(s) {output.images[0].size}"
    elif spec.operation == "edit":
        output = DiffusionEdit(spec, cache).run(
            EditInput(prompt="make it snowy", source=picture), control
        )
        made = f"image {output.images[0].size}"
    elif spec.operation == "reframe":
        output = DiffusionReframe(spec, cache).run(
            ReframeInput(source=picture, width=SIDE * 2, height=SIDE), control
        )
        made = f"image {output.images[0].size}"
    elif spec.operation == "upscale":
        output = DiffusionUpscale(spec, cache).run(
            UpscaleInput(source=picture, width=SIDE * 2, height=SIDE * 2), control
        )
        made = f"image {output.images[0].size}"
    elif spec.operation in ("animate", "transition"):
        with tempfile.TemporaryDirectory() as folder:
            clip = str(Path(folder) / "smoke.mp4")
            model = VideoModel(spec.operation, spec=spec, cache=cache)
            if spec.operation == "animate":
                video = DiffusionAnimate(model=model).run(
                    AnimateInput(picture, "slow zoom", 1.0, 480, 480, False, output_path=clip),
                    control,
                )
            else:
                video = DiffusionTransition(model=model).run(
                    TransitionInput(
                        picture, picture, "dusk", 1.0, 480, 480, False, output_path=clip
                    ),
                    control,
                )
        made = f"{video.frame_count} frames {video.width}x{video.height}"
    else:
        raise ValueError(f"no smoke test for the operation {spec.operation!r}")
    return f"smoke ok: {made} in {time.perf_counter() - started:.1f}s on {cache.device}"
