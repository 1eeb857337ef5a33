"""Tiny random-weight models of the real classes, for tests and the CPU benchmark.

`build_tiny_models(folder)` saves, with `save_pretrained`, diffusers folders laid out exactly
as real ones (model_index.json, unet/, vae/, text_encoder/, tokenizer/, scheduler/) and writes
a registry TOML for them: the real pipeline classes load and run them at 32-64 px in 2 steps on
the CPU. The tokenizer's vocabulary is generated here (byte-level characters, no merges), so
nothing is downloaded. The pictures are noise; the code path is the real one.

    sd15/        StableDiffusionPipeline (generate; reframe via from_pipe -> inpainting)
    pix2pix/     StableDiffusionInstructPix2PixPipeline (edit: an 8-channel UNet)
    upscaler/    StableDiffusionUpscalePipeline (upscale: a 7-channel UNet, x4 VAE)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TINY_SIZE = 32  # the UNets' sample size; with a VAE factor 2 the native size is 64 px
TEXT_WIDTH = 32
VOCAB_SIZE = 1000


def _byte_characters() -> list[str]:
    """CLIP's byte-to-unicode table: every byte as one printable character."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    characters = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return [chr(code) for code in characters]


def write_tokenizer(folder: Path) -> None:
    """A CLIP tokenizer whose vocabulary is every byte, alone and word-final."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    characters = _byte_characters()
    tokens = ["<|startoftext|>", "<|endoftext|>", *characters, *(c + "</w>" for c in characters)]
    vocab_path = folder / "vocab.json"
    merges_path = folder / "merges.txt"
    vocab_path.write_text(json.dumps({token: index for index, token in enumerate(tokens)}))
    merges_path.write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(
        vocab_file=str(vocab_path), merges_file=str(merges_path), model_max_length=32
    )
    vocab_path.unlink()
    merges_path.unlink()
    tokenizer.save_pretrained(str(folder))


def _text_encoder() -> Any:
    from transformers import CLIPTextConfig, CLIPTextModel

    return CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
            hidden_size=TEXT_WIDTH,
            intermediate_size=37,
            num_attention_heads=4,
            num_hidden_layers=2,
            max_position_embeddings=32,
            vocab_size=VOCAB_SIZE,
        )
    )


def _unet(in_channels: int, **extra: Any) -> Any:
    from diffusers import UNet2DConditionModel

    config: dict[str, Any] = {
        "sample_size": TINY_SIZE,
        "in_channels": in_channels,
        "out_channels": 4,
        "layers_per_block": 1,
        "block_out_channels": (32, 64),
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
        "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
        "cross_attention_dim": TEXT_WIDTH,
        "norm_num_groups": 32,
        "attention_head_dim": 8,
    }
    config.update(extra)
    return UNet2DConditionModel(**config)


def _vae(
    levels: int = 2,
    scaling_factor: float = 0.18215,
    attention: bool = True,
    channels: tuple[int, ...] = (32, 64, 64),
) -> Any:
    from diffusers import AutoencoderKL

    channels = channels[:levels]
    return AutoencoderKL(
        block_out_channels=channels,
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * levels,
        up_block_types=("UpDecoderBlock2D",) * levels,
        latent_channels=4,
        norm_num_groups=min(32, channels[0]),
        sample_size=TINY_SIZE * 2,
        scaling_factor=scaling_factor,
        mid_block_add_attention=attention,
    )


def _save(pipeline: Any, folder: Path) -> None:
    pipeline.save_pretrained(str(folder), safe_serialization=True)


def build_tiny_models(folder: Path) -> Path:
    """Save the tiny models under `folder` and return the registry file written beside them."""
    import torch
    from diffusers import (
        DDIMScheduler,
        DDPMScheduler,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        StableDiffusionPipeline,
        StableDiffusionUpscalePipeline,
    )
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    write_tokenizer(folder / "tokenizer")
    tokenizer = CLIPTokenizer.from_pretrained(str(folder / "tokenizer"))
    scheduler_config = {
        "beta_start": 0.00085,
        "beta_end": 0.012,
        "beta_schedule": "scaled_linear",
        "num_train_timesteps": 1000,
    }
    torch.manual_seed(0)
    _save(
        StableDiffusionPipeline(
            vae=_vae(),
            text_encoder=_text_encoder(),
            tokenizer=tokenizer,
            unet=_unet(4),
            scheduler=DDIMScheduler(
                **scheduler_config, clip_sample=False, set_alpha_to_one=False, steps_offset=1
            ),
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
        ),
        folder / "sd15",
    )
    torch.manual_seed(1)
    _save(
        StableDiffusionInstructPix2PixPipeline(
            vae=_vae(),
            text_encoder=_text_encoder(),
            tokenizer=tokenizer,
            unet=_unet(8),
            scheduler=EulerAncestralDiscreteScheduler(**scheduler_config),
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
        ),
        folder / "pix2pix",
    )
    torch.manual_seed(2)
    _save(
        StableDiffusionUpscalePipeline(
            # Without attention either: the VAE's middle block would attend over 128x128 tokens.
            vae=_vae(levels=3, scaling_factor=0.08333, attention=False, channels=(8, 8, 8)),
            text_encoder=_text_encoder(),
            tokenizer=tokenizer,
            # No attention: the upscaler's UNet runs at the input's full size (128 px tiles).
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
        ),
        folder / "upscaler",
    )
    registry = folder / "models.toml"
    registry.write_text(TINY_REGISTRY)
    return registry


# Two steps (12 for a generate at high quality: a job long enough to cancel mid-steps); one
# set of weights serves generate and reframe (from_pipe).
TINY_REGISTRY = """\
[operations.generate]
model = "sfumato/tiny-sd15"
folder = "sd15"
pipeline = "StableDiffusionPipeline"
family = "sd15"
dtype = "float32"
batch_limit = 4
memory_gb = 1.0
[operations.generate.options]
steps = { low = 2, medium = 2, high = 12 }
resolution = 64

[operations.reframe]
model = "sfumato/tiny-sd15"
folder = "sd15"
pipeline = "StableDiffusionPipeline"
family = "sd15"
dtype = "float32"
batch_limit = 4
memory_gb = 1.0
[operations.reframe.options]
steps = 2
resolution = 64

[operations.edit]
model = "sfumato/tiny-pix2pix"
folder = "pix2pix"
pipeline = "StableDiffusionInstructPix2PixPipeline"
family = "sd15"
dtype = "float32"
batch_limit = 4
memory_gb = 1.0
[operations.edit.options]
steps = 2
resolution = 64

[operations.upscale]
model = "sfumato/tiny-upscaler"
folder = "upscaler"
pipeline = "StableDiffusionUpscalePipeline"
family = "sd15"
dtype = "float32"
batch_limit = 4
memory_gb = 1.0
[operations.upscale.options]
steps = 1
guidance = 1.0
tile = 128
overlap = 16
"""
