"""`sfumato models pull|list|remove|presets`, against the stand-in hub (models/testing_hub.py)
serving tiny repositories laid out as the presets' real ones: only the preset's files arrive,
the registry gets the entry and keeps what the user wrote, and every failure (a gated model
without a token, a missing revision, a full disk, an interrupted download) is one line and
leaves no entry behind, a retry resuming."""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from huggingface_hub.utils import filter_repo_objects

from benchmarks.testkit.processes import REPO
from benchmarks.testkit.waits import wait_until
from models.presets import BY_NAME, PRESETS
from models.registry import load_registry
from models.settings import ModelSettings
from models.testing_hub import TOKEN
from models.testing_presets import DECOY, TINY_PRESETS
from pipelines.registry import BUILTIN, DIFFUSION, PipelineRegistry
from tests.support.model_hub import (
    error_lines,
    hosted,
    models_env,
    sfumato_models,
    standin_hub,
    tiny_repositories,
)
from tests.support.threads import ONE_THREAD

SD_TURBO = BY_NAME["sd-turbo"]


def selected(name: str) -> set[str]:
    preset = BY_NAME[name]
    return set(filter_repo_objects(tiny_repositories()[name], allow_patterns=preset.patterns))


def greeting(env: dict[str, str]) -> str:
    """What `make run` prints first (`sfumato demo`)."""
    demo = subprocess.run(
        [sys.executable, "-m", "sfumato", "demo"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    return demo.stdout


def registry_of(data_dir: Path) -> Path:
    return data_dir / "models" / "models.toml"


def test_the_catalogue_has_a_fast_and_a_quality_preset_for_every_operation() -> None:
    for operation in ("generate", "edit", "reframe", "upscale", "animate", "transition"):
        speeds = {preset.speed for preset in PRESETS if preset.operation == operation}
        assert speeds == {"fast", "quality"}, operation
    for preset in PRESETS:
        if preset.builtin:
            continue
        assert len(preset.revision) == 40 and int(preset.revision, 16) >= 0, preset.name
        assert "model_index.json" in preset.patterns, preset.name
        # One precision: never the whole repository, never a .bin, never a root checkpoint.
        assert not any(p in ("*", "**") or p.endswith(".bin") for p in preset.patterns)
        assert all("/" in p for p in preset.patterns if p != "model_index.json"), preset.name
    assert BY_NAME["sd-turbo"].smallest_gpu.endswith("or a CPU")


@pytest.mark.parametrize("name", TINY_PRESETS)
def test_a_tiny_repository_is_laid_out_so_the_patterns_take_the_model_and_nothing_else(
    name: str,
) -> None:
    files = tiny_repositories()[name]
    taken = selected(name)
    assert {path for path, content in files.items() if content == DECOY}.isdisjoint(taken)
    assert {path for path, content in files.items() if content != DECOY} == taken
    if BY_NAME[name].variant == "fp16":
        weights = [path for path in taken if path.endswith(".safetensors")]
        assert weights and all(path.endswith(".fp16.safetensors") for path in weights)


@pytest.mark.slow
def test_pull_fetches_only_the_presets_files_and_registers_them(tmp_path: Path) -> None:
    with standin_hub(*TINY_PRESETS) as hub:
        env = models_env(hub, tmp_path, HF_TOKEN=TOKEN)  # for the gated FLUX.1 [dev] family
        hint = f"sfumato models pull sd-turbo --dir {tmp_path / 'models'}"
        assert hint in greeting(env), "make run says how to get a real model"
        result = sfumato_models(env, "pull", *TINY_PRESETS)
        assert result.returncode == 0, result.stderr
        fetched = {
            request.path.split("/resolve/", 1)[1].split("/", 1)[1]
            for request in hub.requests
            if request.method == "GET" and "/resolve/" in request.path
        }
    assert fetched == set().union(*(selected(name) for name in TINY_PRESETS))
    for name in TINY_PRESETS:
        assert f"{name}: " in result.stdout
        for path in selected(name):
            assert (tmp_path / "models" / name / path).read_bytes() == tiny_repositories()[name][
                path
            ]
    registry = load_registry(registry_of(tmp_path))
    # Several presets of one operation: the last one pulled serves it.
    serving = {
        "generate": "flux-dev",
        "edit": "flux-kontext",
        "reframe": "flux-fill",
        "upscale": "sd-x4-upscaler",
        "animate": "wan2.1-i2v-480p",
        "transition": "wan2.1-flf2v",
    }
    assert {spec.operation: spec.preset for spec in registry.specs()} == serving
    generate = registry.spec("generate")
    assert generate.folder == tmp_path / "models" / "flux-dev"
    assert (generate.pipeline, generate.variant, generate.dtype) == (
        "FluxPipeline",
        None,
        "bfloat16",
    )
    assert "edit by black-forest-labs/FLUX.1-Kontext-dev, generate by black-forest-labs" in (
        greeting(env)
    )
    listed = sfumato_models(env, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(
        line.startswith("generate") and " flux-dev " in line and "MB on disk" in line
        for line in lines
    )
    assert not any("builtin" in line for line in lines), "every operation has a model"
    presets = sfumato_models(env, "presets")
    marked = [line.split()[1] for line in presets.stdout.splitlines() if line.startswith("*")]
    assert sorted(marked) == sorted(serving.values())
    # The header row, a line a preset, the legend.
    assert len(presets.stdout.splitlines()) == len(PRESETS) + 2

    # Pulling sd-turbo again fetches nothing (its files are there) and serves generate again.
    with standin_hub("sd-turbo") as hub:
        again = sfumato_models(models_env(hub, tmp_path), "pull", "sd-turbo")
        assert again.returncode == 0, again.stderr
        assert not [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    assert load_registry(registry_of(tmp_path)).spec("generate").preset == "sd-turbo"

    removed = sfumato_models(env, "remove", "sd-turbo", "flux-dev")
    assert removed.returncode == 0, removed.stderr
    assert "generate runs the builtin pipeline now" in removed.stdout
    assert not (tmp_path / "models" / "sd-turbo").exists()
    assert not (tmp_path / "models" / "flux-dev").exists()
    assert (tmp_path / "models" / "sdxl").is_dir(), "pulled, not serving: still there"
    assert load_registry(registry_of(tmp_path)).operations() == [
        "animate",
        "edit",
        "reframe",
        "transition",
        "upscale",
    ]


@pytest.mark.slow
def test_pull_check_and_remove_print_one_json_document_with_json(tmp_path: Path) -> None:
    """`--json` (issue 38 item 9): stdout is one document, named as the API names things; the
    download's progress, check's lines and every error stay on stderr, the exit codes as
    without it."""
    target = tmp_path / "models" / "sd-turbo"
    with standin_hub("sd-turbo") as hub:
        env = models_env(hub, tmp_path)
        pulled = sfumato_models(env, "pull", "sd-turbo", "realesrgan", "no-such", "--json")
    assert pulled.returncode == 1, "one preset failed"
    turbo, builtin, unknown = json.loads(pulled.stdout)
    assert turbo == {
        "preset": "sd-turbo",
        "operation": "generate",
        "model": SD_TURBO.repo,
        "revision": SD_TURBO.revision,
        "files": len(selected("sd-turbo")),
        "sizeBytes": turbo["sizeBytes"],
        "folder": str(target),
        "registry": str(registry_of(tmp_path)),
    }
    assert turbo["sizeBytes"] >= sum(
        len(tiny_repositories()["sd-turbo"][p]) for p in selected("sd-turbo")
    )
    assert builtin["model"] == "builtin" and builtin["folder"] is None and builtin["files"] == 0
    assert unknown["preset"] == "no-such"
    assert error_lines(pulled) == [f"error: {unknown['error']}"]

    checked = sfumato_models(env, "check", "--device", "cpu", "--json")
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert (report["ok"], report["device"], report["memoryGb"], report["allFit"]) == (
        True, "cpu", None, True
    )  # fmt: skip
    assert report["models"] == [
        {
            "operation": "generate",
            "model": "sd-turbo",
            "folder": str(target),
            "problems": [],
            "loaded": None,
            "smoke": None,
        }
    ]
    progress = checked.stderr.splitlines()
    assert any(line.startswith("generate   ok  ") for line in progress), checked.stderr
    target.rename(tmp_path / "away")
    broken = sfumato_models(env, "check", "--device", "cpu", "--json")
    (tmp_path / "away").rename(target)
    assert broken.returncode == 1
    report = json.loads(broken.stdout)
    assert report["ok"] is False
    (problem,) = report["models"][0]["problems"]
    assert problem.startswith("generate: the folder ") and f"error: {problem}" in broken.stderr

    removed = sfumato_models(env, "remove", "sd-turbo", "sd-turbo", "--json")
    assert removed.returncode == 1, "the second is not installed any more"
    done, refused = json.loads(removed.stdout)
    assert done == {
        "preset": "sd-turbo",
        "operation": "generate",
        "entryRemoved": True,
        "folder": str(target),
        "folderRemoved": True,
        "folderKeptFor": [],
        "servedBy": "builtin pipeline",
    }
    assert not target.exists()
    assert refused == {
        "preset": "sd-turbo",
        "error": f"sd-turbo is not installed in {tmp_path / 'models'}",
    }
    assert error_lines(removed) == [f"error: {refused['error']}"]


def test_a_gated_model_without_a_token_is_one_line_and_registers_nothing(tmp_path: Path) -> None:
    flux = BY_NAME["flux-dev"]
    with standin_hub("flux-dev") as hub:
        env = models_env(hub, tmp_path)
        refused = sfumato_models(env, "pull", "flux-dev")
        assert refused.returncode == 1
        assert error_lines(refused) == [
            f"error: flux-dev: {flux.repo} is gated: accept its licence on its Hugging Face "
            "page, then set HF_TOKEN to a token of that account"
        ]
        assert not registry_of(tmp_path).exists()
        wrong = sfumato_models(env | {"HF_TOKEN": "hf_someone_else"}, "pull", "flux-dev")
        assert wrong.returncode == 1 and "is gated" in wrong.stderr
        allowed = sfumato_models(env | {"HF_TOKEN": TOKEN}, "pull", "flux-dev")
        assert allowed.returncode == 0, allowed.stderr
    assert load_registry(registry_of(tmp_path)).spec("generate").preset == "flux-dev"


def test_a_registry_named_by_sfumato_models_file_gets_the_entry(tmp_path: Path) -> None:
    elsewhere = tmp_path / "etc" / "models.toml"
    with standin_hub("sd-turbo") as hub:
        env = models_env(hub, tmp_path / "data", SFUMATO_MODELS_FILE=str(elsewhere))
        result = sfumato_models(env, "pull", "sd-turbo")
        assert result.returncode == 0, result.stderr
    spec = load_registry(elsewhere).spec("generate")
    assert spec.folder == tmp_path / "data" / "models" / "sd-turbo"
    assert (spec.folder / "model_index.json").is_file()
    assert not registry_of(tmp_path / "data").exists()


def test_a_revision_the_repository_lacks_is_one_line(tmp_path: Path) -> None:
    with standin_hub() as hub:
        hub.add(hosted("sd-turbo", revision="0" * 40))
        result = sfumato_models(models_env(hub, tmp_path), "pull", "sd-turbo")
    assert result.returncode == 1
    assert error_lines(result) == [
        f"error: sd-turbo: {SD_TURBO.repo} has no revision {SD_TURBO.revision}"
    ]
    assert not registry_of(tmp_path).exists()
    assert not (tmp_path / "models" / "sd-turbo").exists()


def test_a_model_bigger_than_the_free_disk_is_refused_before_downloading(tmp_path: Path) -> None:
    unet = "unet/diffusion_pytorch_model.fp16.safetensors"
    with standin_hub() as hub:
        hub.add(hosted("sd-turbo", claimed_sizes={unet: 2**60}))
        result = sfumato_models(models_env(hub, tmp_path), "pull", "sd-turbo")
        downloads = [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert line.startswith("error: sd-turbo: needs 1152921504.6 GB more, ")
    assert "GB free; free room or choose another --dir" in line
    assert downloads == [] and not registry_of(tmp_path).exists()


def test_a_disk_that_fills_up_mid_download_is_one_line_and_a_retry_resumes(
    tmp_path: Path,
) -> None:
    def small_disk() -> None:  # writes past 64 KiB fail as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    with standin_hub("sd-turbo") as hub:
        env = models_env(hub, tmp_path)
        result = sfumato_models(env, "pull", "sd-turbo", preexec=small_disk)
        assert result.returncode == 1
        (line,) = error_lines(result)
        assert line.startswith("error: sd-turbo: cannot write the download: ")
        assert line.endswith("free room and run the pull again to resume it")
        assert not registry_of(tmp_path).exists()
        finished = [
            path
            for path in selected("sd-turbo")
            if (tmp_path / "models" / "sd-turbo" / path).is_file()
        ]
        assert finished, "the small files arrived before the disk filled"
        resumed = sfumato_models(env, "pull", "sd-turbo")
        assert resumed.returncode == 0, resumed.stderr
        for path in finished:
            assert len(hub.gets_of(path)) == 1, f"{path} was downloaded again"
    assert load_registry(registry_of(tmp_path)).spec("generate").preset == "sd-turbo"


def test_a_dropped_connection_resumes_inside_the_file(tmp_path: Path) -> None:
    """The hub client writes in chunks of 10 MB and resumes after the last whole chunk: a
    12 MB weights file (random bytes: this test loads nothing) dropped past its first chunk."""
    unet = "unet/diffusion_pytorch_model.fp16.safetensors"
    chunk = 10 * 2**20
    weights = random.Random(1).randbytes(chunk + 2 * 2**20)
    with standin_hub() as hub:
        repo = hosted("sd-turbo")
        repo.files[unet] = weights
        hub.add(repo)
        hub.drop_once[unet] = chunk + 4096
        result = sfumato_models(models_env(hub, tmp_path), "pull", "sd-turbo")
        gets = hub.gets_of(unet)
    assert result.returncode == 0, result.stderr
    assert [get.range for get in gets] == [None, f"bytes={chunk}-"]
    assert (tmp_path / "models" / "sd-turbo" / unet).read_bytes() == weights


@pytest.mark.slow
def test_a_killed_pull_registers_nothing_and_the_next_one_fetches_only_the_rest(
    tmp_path: Path,
) -> None:
    unet = "unet/diffusion_pytorch_model.fp16.safetensors"
    target = tmp_path / "models" / "sd-turbo"
    with standin_hub("sd-turbo") as hub:
        hub.stall[unet] = 1024
        env = models_env(hub, tmp_path)
        process = subprocess.Popen(
            [sys.executable, "-m", "sfumato", "models", "pull", "sd-turbo"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        others = selected("sd-turbo") - {unet}
        # Done as the hub client counts it: a file moved into place, then its metadata written
        # (a kill between the two leaves a file it fetches again: this test failed so once).
        metadata = target / ".cache" / "huggingface" / "download"
        wait_until(
            lambda: (
                hub.gets_of(unet)
                and all((metadata / f"{path}.metadata").is_file() for path in others)
            ),
            60,
            "every other file, and the stalled one started",
        )
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        assert not registry_of(tmp_path).exists(), "no entry for a half-downloaded model"
        assert not (target / unet).exists()
        del hub.stall[unet]
        hub.release()
        time.sleep(0.1)
        result = sfumato_models(env, "pull", "sd-turbo")
        assert result.returncode == 0, result.stderr
        assert len(hub.gets_of(unet)) == 2
        for path in others:
            assert len(hub.gets_of(path)) == 1, f"{path} was downloaded again"
    assert load_registry(registry_of(tmp_path)).spec("generate").preset == "sd-turbo"


@pytest.mark.slow
def test_check_smoke_runs_one_small_job_per_installed_model(tmp_path: Path) -> None:
    """Through the diffusion pipelines, on the classes of SD-Turbo, the x4 upscaler and FLUX.1
    Kontext and Fill (edit by instruction without strength, outpainting with the Fill class)."""
    smoked = ("sd-turbo", "flux-kontext", "flux-fill", "sd-x4-upscaler")
    with standin_hub(*smoked) as hub:
        env = models_env(hub, tmp_path, HF_TOKEN=TOKEN, **ONE_THREAD)
        pulled = sfumato_models(env, "pull", *smoked)
        assert pulled.returncode == 0, pulled.stderr
    checked = sfumato_models(env, "check", "--smoke", "--device", "cpu")
    assert checked.returncode == 0, checked.stderr
    expected = {
        "generate": r"1 image\(s\) \(256, 256\)",
        "edit": r"image \(256, 256\)",
        "reframe": r"image \(512, 256\)",
        "upscale": r"image \(512, 512\)",
    }
    for operation, made in expected.items():
        pattern = rf"{operation} +smoke ok: {made} in [\d.]+s on cpu"
        assert any(re.match(pattern, line) for line in checked.stdout.splitlines()), operation
    # A model whose weights are gone fails the check, naming the operation.
    (tmp_path / "models" / "sd-x4-upscaler" / "unet" / "config.json").unlink()
    broken = sfumato_models(env, "check", "--smoke", "--device", "cpu")
    assert broken.returncode == 1
    assert any(line.startswith("error: upscale:") for line in error_lines(broken)), broken.stderr


HAND_WRITTEN = """\
# My own models; pull must keep this comment.
[operations.generate]
model = "my/own-sdxl"
folder = "/srv/models/own-sdxl"
pipeline = "StableDiffusionXLPipeline"
family = "sdxl"

[operations.upscale]   # hand-tuned
model = "my/upscaler"
folder = "/srv/models/upscaler"
pipeline = "StableDiffusionUpscalePipeline"
batch_limit = 2
"""


def test_pull_keeps_hand_written_entries_and_replaces_one_only_when_told(tmp_path: Path) -> None:
    registry = registry_of(tmp_path)
    registry.parent.mkdir(parents=True)
    registry.write_text(HAND_WRITTEN)
    with standin_hub("sd-turbo") as hub:
        env = models_env(hub, tmp_path)
        refused = sfumato_models(env, "pull", "sd-turbo")
        assert refused.returncode == 1
        assert error_lines(refused) == [
            "error: generate is served by a hand-written entry (my/own-sdxl) in the registry: "
            "pass --replace to serve it with sd-turbo instead"
        ]
        assert registry.read_text() == HAND_WRITTEN
        assert not hub.gets_of("model_index.json"), "refused before downloading"
        replaced = sfumato_models(env, "pull", "sd-turbo", "--replace")
        assert replaced.returncode == 0, replaced.stderr
    text = registry.read_text()
    assert "# My own models; pull must keep this comment." in text and "# hand-tuned" in text
    document = tomllib.loads(text)["operations"]
    assert document["upscale"] == tomllib.loads(HAND_WRITTEN)["operations"]["upscale"]
    assert document["generate"]["preset"] == "sd-turbo"
    assert load_registry(registry).operations() == ["generate", "upscale"]


def test_a_worker_serves_the_registered_operations_with_diffusion_and_the_rest_builtin(
    tmp_path: Path,
) -> None:
    models = ModelSettings(data_dir=tmp_path)
    assert PipelineRegistry(models=models).target("generate") == BUILTIN["generate"]
    registry = registry_of(tmp_path)
    registry.parent.mkdir(parents=True)
    registry.write_text(HAND_WRITTEN)
    pipelines = PipelineRegistry(models=models)
    assert {op: pipelines.target(op) for op in BUILTIN} == {
        **BUILTIN,
        "generate": DIFFUSION["generate"],
        "upscale": DIFFUSION["upscale"],
    }
    override = "benchmarks.testkit.pipelines:ControllableGenerate"
    overridden = PipelineRegistry({"generate": override}, models)
    assert overridden.target("generate") == override  # SFUMATO_PIPELINES stays an override
    assert overridden.target("upscale") == DIFFUSION["upscale"]
    # SFUMATO_MODELS_FILE stays an override of where the registry is.
    assert (
        PipelineRegistry(models=ModelSettings(data_dir=tmp_path / "empty")).target("upscale")
        == BUILTIN["upscale"]
    )
    elsewhere = ModelSettings(data_dir=tmp_path / "empty", models_file=registry)
    assert PipelineRegistry(models=elsewhere).target("upscale") == DIFFUSION["upscale"]


def offline_env(data_dir: Path, **extra: str) -> dict[str, str]:
    proxies = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    env = {
        key: value
        for key, value in os.environ.items()
        if key.lower() not in proxies and key not in ("HF_ENDPOINT", "HF_HUB_OFFLINE")
    }
    return env | {"HF_HOME": str(data_dir / "hf-home"), "SFUMATO_DATA_DIR": str(data_dir)} | extra


@pytest.mark.slow
def test_a_hub_that_is_gone_is_one_line_at_once(tmp_path: Path) -> None:
    """The stand-in hub stopped: nothing listens on its port (issue 38 item 11)."""
    with standin_hub("sd-turbo") as hub:
        url = hub.url
    started = time.monotonic()
    result = sfumato_models(offline_env(tmp_path, HF_ENDPOINT=url), "pull", "sd-turbo")
    took = time.monotonic() - started
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: sd-turbo: cannot reach the hub at {url}: Connection refused"
    ]
    assert took < 15, f"{took:.1f} s: the hub client's retries take about 25 s"
    assert not registry_of(tmp_path).exists()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare")
def test_offline_a_name_that_does_not_resolve_is_one_line_at_once(tmp_path: Path) -> None:
    """Offline: the pull runs in a network namespace of its own with no interface up (`unshare
    -n`, root), so the hub's name cannot resolve and no packet leaves this machine."""
    command = [sys.executable, "-m", "sfumato", "models", "pull", "sd-turbo"]
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n refused: {probe.stderr.decode().strip()}")
    started = time.monotonic()
    result = subprocess.run(
        ["unshare", "-n", *command], cwd=REPO, env=offline_env(tmp_path),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: sd-turbo: cannot reach the hub at https://huggingface.co: the name "
        "huggingface.co does not resolve (offline?)"
    ]
    assert result.stdout == ""
    assert took < 15
