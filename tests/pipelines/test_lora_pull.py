"""`sfumato models pull --lora REPO --base MODEL` against the stand-in hub: the adapter's
safetensors fetched into the models directory and registered for the model it fits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.registry import load_registry
from models.testing_hub import HostedRepo
from tests.support.diffusion_images import tiny_registry_path
from tests.support.model_hub import error_lines, models_env, sfumato_models, standin_hub

pytestmark = pytest.mark.slow
WEIGHTS = "pytorch_lora_weights.safetensors"


def test_pull_lora_fetches_the_adapter_and_registers_it_for_its_base(tmp_path: Path) -> None:
    weights = (tiny_registry_path().parent / "tiny-lora" / WEIGHTS).read_bytes()
    repo = HostedRepo(
        "someone/tiny-style",
        "main",
        {WEIGHTS: weights, "README.md": b"# a style", "sample.png": b"\x89PNG"},
    )
    with standin_hub("sd-turbo") as hub:
        hub.add(repo)
        env = models_env(hub, tmp_path)
        base = sfumato_models(env, "pull", "sd-turbo")
        assert base.returncode == 0, base.stderr
        pulled = sfumato_models(env, "pull", "--lora", "someone/tiny-style", "--base", "sd-turbo")
        again = sfumato_models(
            env, "pull", "--lora", "someone/tiny-style", "--base", "sd-turbo", "--json"
        )
        unfit = sfumato_models(
            env, "pull", "--lora", "someone/tiny-style", "--base", "sdxl", "--json"
        )
        no_base = sfumato_models(env, "pull", "--lora", "someone/tiny-style")
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith("tiny-style: LoRA for sd-turbo from someone/tiny-style")
    registry = load_registry(tmp_path / "models" / "models.toml")
    (adapter,) = registry.adapters_for("sd-turbo")
    assert (adapter.name, adapter.weight_name, adapter.bases) == (
        "tiny-style",
        WEIGHTS,
        ("sd-turbo",),
    )
    assert sorted(path.name for path in adapter.folder.iterdir() if path.is_file()) == [WEIGHTS]
    assert (adapter.folder / WEIGHTS).read_bytes() == weights
    assert again.returncode == 0, again.stderr
    again_json = json.loads(again.stdout)
    assert again_json[0]["sizeBytes"] >= len(weights), "with the hub client's metadata"
    assert again_json == [
        {
            "lora": "tiny-style",
            "model": "someone/tiny-style",
            "revision": "main",
            "base": "sd-turbo",
            "files": 1,
            "sizeBytes": again_json[0]["sizeBytes"],
            "folder": str(adapter.folder),
            "registry": str(tmp_path / "models" / "models.toml"),
        }
    ]
    assert unfit.returncode == 1
    refusal = "someone/tiny-style: no model 'sdxl' is installed to take it (installed: sd-turbo)"
    assert error_lines(unfit) == [f"error: {refusal}"]
    assert json.loads(unfit.stdout) == [{"model": "someone/tiny-style", "error": refusal}]
    assert no_base.returncode == 1
    assert error_lines(no_base) == [
        "error: --lora needs --base: the installed model the adapters fit"
    ]
