"""Tiny random-weight stand-ins of the presets' repositories, for the stand-in hub
(models/testing_hub.py): the real classes, saved with `save_pretrained` in the precision and
variant the real repository publishes (fp16 files named `*.fp16.safetensors`, or plain fp32
safetensors), with the real `model_index.json` entries, and beside them, as a few bytes each,
the files of the real repository a preset must not fetch (the other precision, the single-file
checkpoint, `.bin` and ONNX copies, pictures): a pull that fetched one would load garbage or
be caught by the tests counting requests.

The models run at the presets' own settings (sizes, steps) on a CPU in about a second: their
VAEs scale by 8 like the real ones, so a 512 px picture is a 64 px latent, and they have no
attention at full latent size.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.presets import BY_NAME

# The presets with a tiny stand-in (the others' families are not built yet: docs/models.md).
TINY_PRESETS = ("sd-turbo", "instruct-pix2pix", "sd-x4-upscaler")

DECOY = b"a file of the real repository that the preset's patterns must not fetch\n"
# Files of each real repository outside the preset's patterns (from the listings docs/models.md
# cites), served as decoys.
REAL_OTHER_FILES: dict[str, tuple[str, ...]] = {
    "sd-turbo": (
        ".gitattributes",
        "LICENSE.md",
        "README.md",
        "image_quality_one_step.png",
        "output_tile.jpg",
        "prompt_alignment_one_step.png",
        "sd_turbo.safetensors",
        "text_encoder/model.safetensors",
        "unet/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ),
    "instruct-pix2pix": (
        ".gitattributes",
        "README.md",
        "feature_extractor/preprocessor_config.json",
        "instruct-pix2pix-00-22000.ckpt",
        "instruct-pix2pix-00-22000.safetensors",
        "safety_checker/config.json",
        "safety_checker/model.safetensors",
        "safety_checker/pytorch_model.bin",
        "text_encoder/pytorch_model.bin",
        "unet/diffusion_pytorch_model.bin",
        "vae/diffusion_pytorch_model.bin",
    ),
    "sd-x4-upscaler": (
        ".gitattributes",
        "README.md",
        "x4-upscaler-ema.safetensors",
        "text_encoder/model.safetensors",
        "unet/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ),
}
# model_index.json entries the real repository has and `save_pretrained` of the tiny one
# writes differently (InstructPix2Pix lists a safety checker the preset does not fetch).
REAL_INDEX_ENTRIES: dict[str, dict[str, Any]] = {
    "instruct-pix2pix": {
        "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
        "feature_extractor": ["transformers", "CLIPImageProcessor"],
        "requires_safety_checker": False,
    },
}


def _vae_by_8() -> Any:
    from models.testing import _vae

    return _vae(levels=4, attention=False, channels=(8, 16, 16, 16))


def _sd_pipeline(name: str, tokenizer: Any) -> Any:
    import torch
    from diffusers import (
        DDIMScheduler,
        DDPMScheduler,
        EulerAncestralDiscreteScheduler,
        EulerDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        StableDiffusionPipeline,
        StableDiffusionUpscalePipeline,
    )

    from models.testing import _text_encoder, _unet, _vae

    schedule = {
        "beta_start": 0.00085,
        "beta_end": 0.012,
        "beta_schedule": "scaled_linear",
        "num_train_timesteps": 1000,
    }
    torch.manual_seed(len(name))
    common = {"text_encoder": _text_encoder(), "tokenizer": tokenizer}
    if name == "sd-turbo":
        return StableDiffusionPipeline(
            vae=_vae_by_8(),
            unet=_unet(4),
            scheduler=EulerDiscreteScheduler(**schedule, timestep_spacing="trailing"),
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
            **common,
        )
    if name == "instruct-pix2pix":
        return StableDiffusionInstructPix2PixPipeline(
            vae=_vae_by_8(),
            unet=_unet(8),
            scheduler=EulerAncestralDiscreteScheduler(**schedule),
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
            **common,
        )
    if name == "sd-x4-upscaler":
        return StableDiffusionUpscalePipeline(
            vae=_vae(levels=3, scaling_factor=0.08333, attention=False, channels=(8, 8, 8)),
            unet=_unet(
                7,
                num_class_embeds=1000,
                down_block_types=("DownBlock2D", "DownBlock2D"),
                up_block_types=("UpBlock2D", "UpBlock2D"),
                mid_block_type="UNetMidBlock2D",
                block_out_channels=(8, 16),
                norm_num_groups=8,
            ),
            low_res_scheduler=DDPMScheduler(),
            scheduler=DDIMScheduler(prediction_type="v_prediction"),
            max_noise_level=350,
            **common,
        )
    raise ValueError(f"no tiny stand-in of the preset {name!r}")


def build_preset_files(name: str, work: Path) -> dict[str, bytes]:
    """The tiny repository of preset `name`: path -> bytes, as the stand-in hub serves it."""
    import torch
    from transformers import CLIPTokenizer

    from models.testing import write_tokenizer

    preset = BY_NAME[name]
    write_tokenizer(work / "tokenizer-source")
    tokenizer = CLIPTokenizer.from_pretrained(str(work / "tokenizer-source"))
    pipe = _sd_pipeline(name, tokenizer)
    folder = work / name
    if preset.variant == "fp16":
        pipe.to(torch.float16)  # the real files are half precision
    pipe.save_pretrained(str(folder), safe_serialization=True, variant=preset.variant)
    index_path = folder / "model_index.json"
    index = json.loads(index_path.read_text())
    index.update(REAL_INDEX_ENTRIES.get(name, {}))
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True))
    files = {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    return files | {path: DECOY for path in REAL_OTHER_FILES.get(name, ()) if path not in files}
