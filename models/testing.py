"""Tiny random-weight models of the real classes, for tests and the CPU benchmark.

`build_tiny_models(folder)` saves, with `save_pretrained`, diffusers folders laid out exactly
as real ones (model_index.json, unet/, vae/, text_encoder/, tokenizer/, scheduler/) and writes
a registry TOML for them: the real pipeline classes load and run them at 32-64 px in 2 steps on
the CPU. The tokenizer's vocabulary is generated here (byte-level characters, no merges), so
nothing is downloaded. The pictures are noise; the code path is the real one.

    sd15/        StableDiffusionPipeline (generate; reframe via from_pipe -> inpainting)
    ip-adapter/  an IP-Adapter for sd15 (`ip_adapter = { folder = "ip-adapter", ... }`)
    tiny-lora/   a LoRA adapter for sd15's UNet, random (not zero) weights (`[loras.tiny-lora]`)
    pix2pix/     StableDiffusionInstructPix2PixPipeline (edit: an 8-channel UNet)
    upscaler/    StableDiffusionUpscalePipeline (upscale: a 7-channel UNet, x4 VAE)

`build_turbo_sized(folder)` saves SD-Turbo's architecture at full size with random weights, laid
out and registered as `sfumato models pull sd-turbo` would: for timing a GPU where the real
weights cannot be fetched (the work per step is the real model's; the pictures are noise).
`build_sdxl_sized(folder)` does the same for SDXL base 1.0 (the `sdxl` preset).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY_SIZE = 32  # the UNets' sample size; with a VAE factor 2 the native size is 64 px
TEXT_WIDTH = 32
VOCAB_SIZE = 1000
CLIP_VOCAB_SIZE = 49408  # the real tokenizer's, for the full-size text tower
IP_WEIGHTS = "ip-adapter.safetensors"
BOS, EOS = "<|startoftext|>", "<|endoftext|>"
BOS_ID, EOS_ID = 512, 513  # after the 256 bytes, alone and word-final


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


def write_tokenizer(folder: Path, max_length: int = 32) -> None:
    """A CLIP tokenizer whose vocabulary is every byte, alone and word-final, with CLIP's two
    special tokens last (as in the real vocabulary); no merges, so a word is its letters."""
    from transformers import CLIPTokenizer

    characters = _byte_characters()
    tokens = [*characters, *(c + "</w>" for c in characters), BOS, EOS]
    tokenizer = CLIPTokenizer(
        vocab={token: index for index, token in enumerate(tokens)},
        merges=[],
        model_max_length=max_length,
    )
    tokenizer.save_pretrained(str(folder))


def _text_encoder(with_projection: bool = False, **sizes: Any) -> Any:
    """A CLIP text encoder (with its projection: SDXL's second encoder), tiny unless `sizes`
    say otherwise (a full-size tower)."""
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    config = CLIPTextConfig(
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=EOS_ID,
        **{
            "vocab_size": VOCAB_SIZE,
            "hidden_size": TEXT_WIDTH,
            "intermediate_size": 37,
            "num_attention_heads": 4,
            "num_hidden_layers": 2,
            "max_position_embeddings": 32,
            "projection_dim": TEXT_WIDTH,
            **sizes,
        },
    )
    return (CLIPTextModelWithProjection if with_projection else CLIPTextModel)(config)


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
    layers_per_block: int = 1,
    sample_size: int = TINY_SIZE * 2,
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
        layers_per_block=layers_per_block,
        norm_num_groups=min(32, channels[0]),
        sample_size=sample_size,
        scaling_factor=scaling_factor,
        mid_block_add_attention=attention,
    )


def write_ip_adapter(unet: Any, folder: Path) -> None:
    """An IP-Adapter for `unet` laid out as the public ones are: `ip-adapter.safetensors`
    (image projection and the cross-attention processors' extra key/value weights, numbered as
    diffusers reads them) and `image_encoder/` (a CLIP vision model with projection)."""
    from diffusers.models.attention_processor import IPAdapterAttnProcessor
    from diffusers.models.embeddings import ImageProjection
    from safetensors.torch import save_file
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    state: dict[str, Any] = {}
    key_id = 1
    widths = unet.config.block_out_channels
    for name in unet.attn_processors:
        if name.endswith("attn1.processor"):
            continue  # self-attention: no image tokens
        if name.startswith("mid_block"):
            hidden = widths[-1]
        elif name.startswith("up_blocks"):
            hidden = list(reversed(widths))[int(name[len("up_blocks.")])]
        else:
            hidden = widths[int(name[len("down_blocks.")])]
        weights = IPAdapterAttnProcessor(hidden, unet.config.cross_attention_dim).state_dict()
        state[f"ip_adapter.{key_id}.to_k_ip.weight"] = weights["to_k_ip.0.weight"]
        state[f"ip_adapter.{key_id}.to_v_ip.weight"] = weights["to_v_ip.0.weight"]
        key_id += 2
    projection = ImageProjection(
        cross_attention_dim=unet.config.cross_attention_dim,
        image_embed_dim=TEXT_WIDTH,
        num_image_text_embeds=4,  # what diffusers assumes of a plain IP-Adapter
    ).state_dict()
    state["image_proj.proj.weight"] = projection["image_embeds.weight"]
    state["image_proj.proj.bias"] = projection["image_embeds.bias"]
    state["image_proj.norm.weight"] = projection["norm.weight"]
    state["image_proj.norm.bias"] = projection["norm.bias"]
    folder.mkdir(parents=True, exist_ok=True)
    save_file({key: value.contiguous() for key, value in state.items()}, folder / IP_WEIGHTS)
    CLIPVisionModelWithProjection(
        CLIPVisionConfig(
            hidden_size=TEXT_WIDTH,
            projection_dim=TEXT_WIDTH,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            image_size=32,
            patch_size=8,
        )
    ).save_pretrained(str(folder / "image_encoder"))


def write_tiny_lora(unet: Any, folder: Path) -> None:
    """A LoRA adapter of `unet`'s attention projections, saved as diffusers saves one
    (`pytorch_lora_weights.safetensors`). peft starts an adapter's up-projections at zero (no
    effect); here they are random, so the adapter visibly changes what the model makes."""
    import copy

    import torch
    from diffusers import StableDiffusionPipeline
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict

    adapted = copy.deepcopy(unet)
    adapted.add_adapter(
        LoraConfig(r=4, lora_alpha=4, target_modules=["to_q", "to_k", "to_v", "to_out.0"])
    )
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, parameter in adapted.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    StableDiffusionPipeline.save_lora_weights(
        str(folder),
        unet_lora_layers=get_peft_model_state_dict(adapted),
        safe_serialization=True,
    )


def _save(pipeline: Any, folder: Path) -> None:
    pipeline.save_pretrained(str(folder), safe_serialization=True)


# The noise schedule of Stable Diffusion 1.x/2.x, for the tiny models' schedulers.
SD_SCHEDULE = {
    "beta_start": 0.00085,
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "num_train_timesteps": 1000,
}


def sd_pipeline(
    tokenizer: Any, unet: Any, vae: Any, scheduler: Any, text_encoder: Any = None
) -> Any:
    """A `StableDiffusionPipeline` of these parts (no safety checker), with the tiny text
    encoder unless another is given."""
    from diffusers import StableDiffusionPipeline

    return StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder or _text_encoder(),
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def pix2pix_pipeline(tokenizer: Any, vae: Any) -> Any:
    """A tiny `StableDiffusionInstructPix2PixPipeline`: an 8-channel UNet (noise and source)."""
    from diffusers import EulerAncestralDiscreteScheduler, StableDiffusionInstructPix2PixPipeline

    return StableDiffusionInstructPix2PixPipeline(
        vae=vae,
        text_encoder=_text_encoder(),
        tokenizer=tokenizer,
        unet=_unet(8),
        scheduler=EulerAncestralDiscreteScheduler(**SD_SCHEDULE),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def upscaler_pipeline(tokenizer: Any) -> Any:
    """A tiny `StableDiffusionUpscalePipeline`: a 7-channel UNet, a VAE by 4."""
    from diffusers import DDIMScheduler, DDPMScheduler, StableDiffusionUpscalePipeline

    return StableDiffusionUpscalePipeline(
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
    )


def build_tiny_models(folder: Path, generate_steps: int = 2) -> Path:
    """Save the tiny models under `folder` and return the registry file written beside them;
    `generate_steps` are the steps of a generate at low and medium quality."""
    import torch
    from diffusers import DDIMScheduler
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    write_tokenizer(folder / "tokenizer")
    tokenizer = CLIPTokenizer.from_pretrained(str(folder / "tokenizer"))
    torch.manual_seed(0)
    unet = _unet(4)
    scheduler = DDIMScheduler(
        **SD_SCHEDULE, clip_sample=False, set_alpha_to_one=False, steps_offset=1
    )
    _save(sd_pipeline(tokenizer, unet, _vae(), scheduler), folder / "sd15")
    write_ip_adapter(unet, folder / "ip-adapter")
    write_tiny_lora(unet, folder / "tiny-lora")
    torch.manual_seed(1)
    _save(pix2pix_pipeline(tokenizer, _vae()), folder / "pix2pix")
    torch.manual_seed(2)
    _save(upscaler_pipeline(tokenizer), folder / "upscaler")
    return write_tiny_registry(folder, generate_steps)


def write_tiny_registry(folder: Path, generate_steps: int = 2, dtype: str = "float32") -> Path:
    """The registry of the tiny models saved under `folder`, loading them in `dtype`:
    `models.toml` (float32) or `models-DTYPE.toml` beside it; returns its path."""
    registry = folder / ("models.toml" if dtype == "float32" else f"models-{dtype}.toml")
    steps = TINY_REGISTRY.replace(
        "low = 2, medium = 2", f"low = {generate_steps}, medium = {generate_steps}"
    )
    registry.write_text(in_dtype(steps, dtype))
    return registry


def in_dtype(registry_text: str, dtype: str) -> str:
    """A tiny registry's tables (written in float32) loading their models in `dtype`."""
    return registry_text.replace('dtype = "float32"', f'dtype = "{dtype}"')


def build_turbo_sized(folder: Path, dtype: str = "float16") -> Path:
    """SD-Turbo's architecture (SD 2.1's UNet, OpenCLIP ViT-H's text tower with CLIP's 49,408
    tokens, the SD VAE: about 1.3 billion parameters) with random weights, saved in fp16 files
    under `folder`/sd-turbo as the preset's pull lays them out (once: a second call reuses
    them), and registered for generate with the preset's entry in `dtype`; returns the registry
    file. The tokenizer is the tiny byte one at CLIP's 77 tokens: it uses few of the rows."""
    import dataclasses
    import tempfile

    import torch
    from diffusers import EulerDiscreteScheduler
    from diffusers import UNet2DConditionModel as UNet
    from transformers import CLIPTokenizer

    from models.install import register
    from models.presets import preset_named

    preset = preset_named("sd-turbo")
    weights = folder / preset.folder
    if not (weights / "model_index.json").exists():
        with tempfile.TemporaryDirectory() as tokenizer_folder:
            write_tokenizer(Path(tokenizer_folder), max_length=77)
            tokenizer = CLIPTokenizer.from_pretrained(tokenizer_folder)
        torch.manual_seed(0)
        pipeline: Any = sd_pipeline(
            tokenizer,
            UNet(
                sample_size=64,
                cross_attention_dim=1024,
                attention_head_dim=(5, 10, 20, 20),
                use_linear_projection=True,
            ),
            _vae(levels=4, channels=(128, 256, 512, 512), layers_per_block=2, sample_size=512),
            EulerDiscreteScheduler(**SD_SCHEDULE, timestep_spacing="trailing", steps_offset=1),
            text_encoder=_text_encoder(
                vocab_size=CLIP_VOCAB_SIZE,
                hidden_size=1024,
                intermediate_size=4096,
                num_attention_heads=16,
                num_hidden_layers=23,
                max_position_embeddings=77,
                hidden_act="gelu",
                projection_dim=512,
            ),
        )
        pipeline.to(torch.float16)
        pipeline.save_pretrained(str(weights), safe_serialization=True, variant="fp16")
    registry = folder / "models.toml"
    register(registry, dataclasses.replace(preset, dtype=dtype), replace=True)
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

[loras.tiny-lora]
model = "sfumato/tiny-lora"
folder = "tiny-lora"
bases = ["sd15"]
"""


def build_sdxl_sized(folder: Path, dtype: str = "float16") -> Path:
    """SDXL base 1.0's architecture (its UNet of 2.6 billion parameters, CLIP ViT-L and OpenCLIP
    ViT-bigG's text towers, the SDXL VAE) with random weights, saved in fp16 files under
    `folder`/sdxl as the preset's pull lays them out (once), and registered for generate with
    the preset's entry in `dtype`; returns the registry file. The tokenizers are the tiny byte
    one at CLIP's 77 tokens."""
    import dataclasses
    import tempfile

    import torch
    from diffusers import EulerDiscreteScheduler, StableDiffusionXLPipeline
    from diffusers import UNet2DConditionModel as UNet
    from transformers import CLIPTokenizer

    from models.install import register
    from models.presets import preset_named

    preset = preset_named("sdxl")
    weights = folder / preset.folder
    if not (weights / "model_index.json").exists():
        with tempfile.TemporaryDirectory() as tokenizer_folder:
            write_tokenizer(Path(tokenizer_folder), max_length=77)
            tokenizer = CLIPTokenizer.from_pretrained(tokenizer_folder)
        torch.manual_seed(0)
        pipeline: Any = StableDiffusionXLPipeline(
            vae=_vae(
                levels=4,
                channels=(128, 256, 512, 512),
                layers_per_block=2,
                sample_size=1024,
                scaling_factor=0.13025,
            ),
            text_encoder=_text_encoder(
                vocab_size=CLIP_VOCAB_SIZE,
                max_position_embeddings=77,
                hidden_size=768,
                intermediate_size=3072,
                num_attention_heads=12,
                num_hidden_layers=12,
                hidden_act="quick_gelu",
                projection_dim=768,
            ),
            text_encoder_2=_text_encoder(
                with_projection=True,
                vocab_size=CLIP_VOCAB_SIZE,
                max_position_embeddings=77,
                hidden_size=1280,
                intermediate_size=5120,
                num_attention_heads=20,
                num_hidden_layers=32,
                hidden_act="gelu",
                projection_dim=1280,
            ),
            tokenizer=tokenizer,
            tokenizer_2=tokenizer,
            unet=UNet(
                sample_size=128,
                layers_per_block=2,
                block_out_channels=(320, 640, 1280),
                down_block_types=(
                    "DownBlock2D",
                    "CrossAttnDownBlock2D",
                    "CrossAttnDownBlock2D",
                ),
                up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                transformer_layers_per_block=(1, 2, 10),
                attention_head_dim=(5, 10, 20),
                cross_attention_dim=2048,
                use_linear_projection=True,
                addition_embed_type="text_time",
                addition_time_embed_dim=256,
                projection_class_embeddings_input_dim=2816,
            ),
            scheduler=EulerDiscreteScheduler(**SD_SCHEDULE, steps_offset=1),
        )
        pipeline.to(torch.float16)
        pipeline.save_pretrained(str(weights), safe_serialization=True, variant="fp16")
    registry = folder / "models.toml"
    register(registry, dataclasses.replace(preset, dtype=dtype), replace=True)
    return registry
