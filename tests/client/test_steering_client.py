"""Steering (issue 33) from the Python client and the `sfumato` command line, against the real
service: the seed, negative prompt, model, steps, guidance, LoRA and mask arguments reach the
API, and a seed printed by the CLI remakes the same file."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from sfumato_client import Client, ValidationError
from tests.client.test_cli import run
from tests.support.service import Service

pytestmark = pytest.mark.slow


def test_the_client_sends_each_steering_argument(client: Client, tmp_path: Path) -> None:
    models = client.models.list(operation="generate")
    assert [(model.id, model.default, model.steps) for model in models] == [("builtin", True, None)]
    job = client.images.generate(
        "a lighthouse", quality="low", seed=99, negative_prompt="fog", model="builtin"
    ).wait()
    again = client.images.generate("a lighthouse", quality="low", seed=99).wait()
    assert job.result is not None and again.result is not None
    assert (job.result.seed, job.result.model) == (99, "builtin")
    assert "the builtin painter does not use a negative prompt" in (job.notes or [])
    first, second = job.download(tmp_path / "a")[0], again.download(tmp_path / "b")[0]
    assert first.read_bytes() == second.read_bytes()
    mask = tmp_path / "mask.png"
    Image.new("L", (job.result.images[0].width, job.result.images[0].height), 255).save(mask)
    edited = client.images.edit(job.id, "make it black and white", mask=mask, seed=4).wait()
    assert edited.result is not None and edited.result.seed == 4
    assert "applied inside the mask only" in (edited.notes or [])
    with pytest.raises(ValidationError) as refused:
        client.images.generate("x", steps=4, guidance=2.5, loras=[("pixel-art", 0.5)])
    assert set(refused.value.details or {}) == {"steps", "guidance", "loras[0].name"}


def test_the_cli_prints_the_seed_and_the_seed_remakes_the_picture(
    service: Service, key: str, tmp_path: Path
) -> None:
    common = ("generate", "a red barn", "--quality", "low")
    code, out, err = run(service, key, *common, "-o", str(tmp_path / "first"))
    assert code == 0, err
    seed = int(err.split("seed ", 1)[1].split()[0])
    code, again_out, err = run(
        service, key, *common, "--seed", str(seed), "--negative", "people", "--model", "builtin",
        "-o", str(tmp_path / "again"),
    )  # fmt: skip
    assert code == 0, err
    first = Path(out.splitlines()[-1]).read_bytes()
    again = Path(again_out.splitlines()[-1]).read_bytes()
    assert first == again
    with Image.open(io.BytesIO(first)) as image:
        assert image.size == (1024, 1024)
    code, _, err = run(service, key, *common, "--steps", "4", "--lora", "pixel-art:0.5")
    assert code == 3 and "VALIDATION_ERROR" in err
    code, _, err = run(service, key, *common, "--lora", "pixel-art:strong")
    assert code == 2 and "must be a number" in err
