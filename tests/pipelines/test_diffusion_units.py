"""The model registry, the cache, seeds, batching and `sfumato models`, on the tiny models."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from benchmarks.testkit.processes import REPO
from models.cache import ModelCache
from models.loading import check
from models.registry import ModelRegistry, RegistryError, load_registry
from models.testing import IP_WEIGHTS
from pipelines.base import Cancelled, GenerateInput, ImageOutput, OutOfDeviceMemory, ReframeInput
from pipelines.diffusion.generate import DiffusionGenerate
from pipelines.diffusion.reframe import DiffusionReframe
from tests.support.control import RecordingControl
from tests.support.diffusion_images import tiny_registry_path
from workers.batching import Batcher


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    return load_registry(tiny_registry_path())


@pytest.fixture(scope="module")
def generate(registry: ModelRegistry) -> DiffusionGenerate:
    return DiffusionGenerate(registry.spec("generate"), ModelCache(device="cpu"))


def test_the_cache_shares_weights_and_evicts_the_least_recently_used(
    registry: ModelRegistry,
) -> None:
    cache = ModelCache(device="cpu", budget_gb=2.5)  # each tiny model is estimated at 1 GB
    generate, edit, upscale = (registry.spec(name) for name in ("generate", "edit", "upscale"))
    with cache.pipeline_for(generate) as text_to_image:
        pass
    with cache.pipeline_for(generate, "inpainting") as inpainting:
        assert type(inpainting).__name__ == "StableDiffusionInpaintPipeline"
        assert inpainting.unet is text_to_image.unet, "one set of weights (from_pipe)"
    with cache.pipeline_for(registry.spec("reframe"), "inpainting") as again:
        assert again is inpainting, "reframe names the same folder: a hit"
    assert (cache.stats.misses, cache.stats.hits) == (2, 1)

    cache.ensure(edit)
    cache.ensure(generate)  # used last: the pix2pix weights are now the oldest
    assert cache.loaded() == [edit.weights_key, generate.weights_key]
    cache.ensure(upscale)
    assert cache.stats.evictions == [str(edit.folder)]
    assert cache.loaded() == [generate.weights_key, upscale.weights_key]

    with cache.pipeline_for(generate):  # in use: never evicted, even over the budget
        cache.ensure(edit)
    assert cache.stats.evictions == [str(edit.folder), str(upscale.folder)]
    assert generate.weights_key in cache.loaded()


def test_running_out_of_memory_releases_the_other_unused_models(
    registry: ModelRegistry,
) -> None:
    cache = ModelCache(device="cpu", budget_gb=10)
    generate, edit, upscale = (registry.spec(name) for name in ("generate", "edit", "upscale"))
    for spec in (generate, edit, upscale):
        cache.ensure(spec)
    with cache.pipeline_for(upscale):  # another job's call holds these
        cache.release_unused(keep=generate)
    assert cache.loaded() == [generate.weights_key, upscale.weights_key]
    assert cache.stats.evictions == [str(edit.folder)]


def test_a_seed_gives_the_same_pictures_alone_or_in_a_batch(generate: DiffusionGenerate) -> None:
    first = GenerateInput(prompt="a quiet harbour", width=64, height=64, seed=7, variations=2)
    second = GenerateInput(prompt="a loud market", width=64, height=64, seed=8)
    alone = generate.run(first, RecordingControl())
    again = generate.run(first, RecordingControl())
    batched = generate.run_batch([second, first], [RecordingControl(), RecordingControl()])
    pixels = [np.asarray(image, np.float32) for image in alone.images]
    assert np.array_equal(pixels[0], np.asarray(again.images[0], np.float32))
    assert not np.array_equal(pixels[0], pixels[1]), "each variation its own seed"
    other_prompt = generate.run(replace(first, prompt="a storm at sea"), RecordingControl())
    assert not np.array_equal(pixels[0], np.asarray(other_prompt.images[0], np.float32))
    output = batched[1]
    assert isinstance(output, ImageOutput) and len(output.images) == 2
    for mine, theirs in zip(pixels, output.images, strict=True):
        assert np.abs(mine - np.asarray(theirs, np.float32)).mean() < 1.0


def test_a_cancelled_member_is_dropped_and_the_others_finish(
    generate: DiffusionGenerate,
) -> None:
    jobs = [GenerateInput(prompt=f"picture {i}", width=64, height=64, seed=i) for i in range(3)]
    controls = [RecordingControl(), RecordingControl(cancel_above=0.0), RecordingControl()]
    results = generate.run_batch(jobs, controls)
    assert isinstance(results[1], Cancelled)
    assert all(isinstance(results[i], ImageOutput) for i in (0, 2))
    assert max(controls[0].fractions) > 0.5 and max(controls[1].fractions) <= 0.5


def test_an_ip_adapter_takes_the_references_and_its_weights_still_serve_every_task(
    registry: ModelRegistry,
) -> None:
    spec = registry.spec("generate")
    adapter = {"folder": str(spec.folder.parent / "ip-adapter"), "weight_name": IP_WEIGHTS}
    with_adapter = spec.model_copy(update={"options": {**spec.options, "ip_adapter": adapter}})
    pipeline = DiffusionGenerate(with_adapter, ModelCache(device="cpu"))
    red, blue = Image.new("RGB", (40, 40), (220, 20, 20)), Image.new("RGB", (40, 40), (0, 0, 230))
    jobs = [
        GenerateInput(prompt="a vase", width=64, height=64, seed=3, references=(red,)),
        GenerateInput(prompt="a vase", width=64, height=64, seed=3, references=(blue,)),
    ]
    assert pipeline.batch_key(jobs[0]) is None, "one reference per call: such a job runs alone"
    outputs = [pipeline.run(job, RecordingControl()) for job in jobs]
    pictures = [np.asarray(output.images[0], np.float32) for output in outputs]
    assert not np.array_equal(pictures[0], pictures[1]), "the reference reached the UNet"
    assert "IP-Adapter" in outputs[0].notes[-1]
    plain = pipeline.run(
        GenerateInput(prompt="a vase", width=64, height=64, seed=3), RecordingControl()
    )
    assert plain.images[0].size == (64, 64)
    with pipeline.cache.pipeline_for(with_adapter, "inpainting") as inpainting:
        assert inpainting.image_encoder is not None, "the shared UNet needs image embeddings"


def test_reframe_paints_only_the_new_area_and_skips_a_same_ratio_job(
    registry: ModelRegistry,
) -> None:
    pipeline = DiffusionReframe(registry.spec("reframe"), ModelCache(device="cpu"))
    calls: list[int] = []
    pipeline.call_listeners.append(calls.append)
    source = Image.effect_noise((48, 48), 60).convert("RGB")
    wide = ReframeInput(source=source, width=144, height=48, seed=1)
    same = ReframeInput(source=source, width=96, height=96, seed=2)
    outputs = pipeline.run_batch([wide, same], [RecordingControl(), RecordingControl()])
    assert calls == [1], "one call, for the job with a new area only"
    widened, enlarged = (o.images[0] for o in outputs if isinstance(o, ImageOutput))
    assert widened.size == (144, 48) and enlarged.size == (96, 96)
    middle = np.asarray(widened, np.float32)[:, 60:84]
    assert np.abs(middle - np.asarray(source, np.float32)[:, 12:36]).max() < 2
    expected = source.resize((96, 96), Image.Resampling.LANCZOS)
    assert np.array_equal(np.asarray(enlarged), np.asarray(expected))


class FakeBatching:
    """A batching pipeline that records its calls (the batcher's own logic, without models)."""

    operation = "generate"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def batch_key(self, inputs: str) -> str:
        return inputs.split(":")[0]

    def batch_weight(self, inputs: str) -> int:
        return 1

    def batch_capacity(self) -> int:
        return 3

    def run_batch(self, inputs: list[str], controls: list[Any]) -> list[Any]:
        self.calls.append(list(inputs))
        results: list[Any] = []
        for item, control in zip(inputs, controls, strict=True):
            try:
                control.progress(0.5)
                results.append(ImageOutput(images=[], notes=[item]))
            except Cancelled as cancelled:
                results.append(cancelled)
        return results


def test_the_batcher_fills_batches_by_key_and_capacity() -> None:
    pipeline = FakeBatching()
    batcher = Batcher(window_seconds=0.5)
    outcomes: dict[str, Any] = {}

    def submit(item: str, control: RecordingControl) -> None:
        try:
            outcomes[item] = batcher.run(pipeline, item, control).notes[0]
        except Cancelled:
            outcomes[item] = "cancelled"

    items = ["a:1", "a:2", "a:3", "a:4", "b:1"]
    controls = {item: RecordingControl() for item in items}
    controls["a:2"] = RecordingControl(cancel_above=0.1)
    threads = [threading.Thread(target=submit, args=(i, controls[i])) for i in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(len(call) for call in pipeline.calls) == [1, 1, 3]
    assert all(len({item[0] for item in call}) == 1 for call in pipeline.calls)
    assert outcomes == {"a:1": "a:1", "a:2": "cancelled", "a:3": "a:3", "a:4": "a:4", "b:1": "b:1"}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


ENTRY = 'model = "m"\nfolder = "m"\npipeline = "StableDiffusionPipeline"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[operations.generate]\n" + ENTRY + "colour = 3\n", "colour: Extra inputs"),
        ("[operations.generate]\n" + ENTRY + 'dtype = "int8"\n', "dtype: Input should be"),
        ('[operations.generate]\nmodel = "m"\npipeline = "X"\n', "folder: field required"),
        ("[operations.generate]\n" + ENTRY + "batch_limit = 0\n", "batch_limit"),
        ("[models]\n", "unknown top-level keys ['models']"),
        ("[operations.generate\n", "cannot read the model registry"),
    ],
)
def test_a_bad_registry_says_which_entry_and_why(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RegistryError, match=r"\[operations\.generate\]|registry|top-level") as err:
        load_registry(write(tmp_path / "models.toml", text))
    assert message in str(err.value)


def test_check_names_a_missing_folder(tmp_path: Path) -> None:
    spec = load_registry(write(tmp_path / "models.toml", "[operations.edit]\n" + ENTRY)).spec(
        "edit"
    )
    assert check(spec, "cpu") == [f"edit: the folder {tmp_path / 'm'} of m does not exist"]


def sfumato(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sfumato", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_models_list_and_check(tmp_path: Path) -> None:
    env = {"SFUMATO_MODELS_FILE": str(tiny_registry_path())}
    listed = sfumato(env, "models", "list")
    assert listed.returncode == 0, listed.stderr
    assert "generate" in listed.stdout and "StableDiffusionPipeline" in listed.stdout
    checked = sfumato(env, "models", "check", "--device", "cpu")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.count(" ok ") == 4 and "3 sets of weights" in checked.stdout

    broken = write(tmp_path / "models.toml", "[operations.generate]\n" + ENTRY)
    failed = sfumato({"SFUMATO_MODELS_FILE": str(broken)}, "models", "check")
    assert failed.returncode == 1 and "does not exist" in failed.stderr


@pytest.mark.slow
def test_a_worker_whose_model_is_missing_does_not_start(tmp_path: Path) -> None:
    broken = write(tmp_path / "models.toml", "[operations.generate]\n" + ENTRY)
    result = sfumato(
        {
            "SFUMATO_MODELS_FILE": str(broken),
            "SFUMATO_PIPELINES": "generate=pipelines.diffusion.generate:DiffusionGenerate",
            "SFUMATO_DATA_DIR": str(tmp_path / "data"),
            "SFUMATO_BROKER_URL": "redis://127.0.0.1:6379/11",
        },
        "worker",
        "--queue",
        "image",
    )
    assert result.returncode == 1
    assert "the image worker cannot load its models" in result.stderr
    assert str(tmp_path / "m") in result.stderr


class RunsOutOfMemory(DiffusionGenerate):
    """The real generate whose diffusers call raises CUDA's out-of-memory error for calls of
    more than `fits` images (0: every call), as a full card would."""

    fits = 0
    calls: list[int]

    def invoke(self, pipe: Any, arguments: dict[str, Any]) -> Any:
        import torch

        self.calls.append(len(arguments["prompt"]))
        if len(arguments["prompt"]) > self.fits:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")
        return super().invoke(pipe, arguments)


def test_out_of_memory_on_one_image_fails_the_call_frees_memory_and_the_next_call_runs(
    registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    freed: list[bool] = []
    monkeypatch.setattr("models.cache.free_device_memory", lambda: freed.append(True))
    cache = ModelCache(device="cpu", budget_gb=10)
    cache.ensure(registry.spec("upscale"))  # another model, loaded and unused
    pipeline = RunsOutOfMemory(registry.spec("generate"), cache)
    pipeline.calls = []
    job = GenerateInput(prompt="a lantern", width=64, height=64, seed=5, variations=4)
    with pytest.raises(OutOfDeviceMemory, match="one image does not fit"):
        pipeline.run(job, RecordingControl())
    assert pipeline.calls == [4, 2, 1]  # halved down to one image, which still fails
    assert cache.stats.evictions == [str(registry.spec("upscale").folder)]
    assert freed, "the device's cache was emptied"

    pipeline.fits, pipeline.calls = 1, []
    output = pipeline.run(job, RecordingControl())
    assert len(output.images) == 4
    assert pipeline.calls == [4, 2, 1, 1, 2, 1, 1]
    alone = [
        pipeline.run(replace(job, seed=5 + i, variations=1), RecordingControl()) for i in range(4)
    ]
    for split, single in zip(output.images, alone, strict=True):
        difference = np.abs(
            np.asarray(split, np.float32) - np.asarray(single.images[0], np.float32)
        )
        assert difference.mean() < 1.0, "a split batch makes the pictures it would have made"
