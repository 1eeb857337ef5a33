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
TINY_PRESETS = (
    "sd-turbo",
    "sdxl",
    "flux-schnell",
    "flux-dev",
    "instruct-pix2pix",
    "flux-kontext",
    "sdxl-inpaint",
    "flux-fill",
    "sd-x4-upscaler",
    "ltx-video",
    "wan2.1-i2v-480p",
    "wan2.1-flf2v",
)
FLUX_PRESETS = ("flux-schnell", "flux-dev", "flux-kontext", "flux-fill")
# How the real FLUX.1 repositories shard their weights (the transformer in three files, T5 in
# two, each with its index).
FLUX_SHARDS = {"transformer": ("diffusion_pytorch_model", 3), "text_encoder_2": ("model", 2)}

# The single-file checkpoint beside each FLUX.1 repository's diffusers folders.
FLUX_SINGLE_FILES = {
    "flux-schnell": "flux1-schnell.safetensors",
    "flux-dev": "flux1-dev.safetensors",
    "flux-kontext": "flux1-kontext-dev.safetensors",
    "flux-fill": "flux1-fill-dev.safetensors",
}

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
    "sdxl": (
        ".gitattributes",
        "01.png",
        "LICENSE.md",
        "README.md",
        "comparison.png",
        "pipeline.png",
        "sd_xl_base_1.0.safetensors",
        "sd_xl_base_1.0_0.9vae.safetensors",
        "sd_xl_offset_example-lora_1.0.safetensors",
        "text_encoder/flax_model.msgpack",
        "text_encoder/model.onnx",
        "text_encoder/model.safetensors",
        "text_encoder/openvino_model.bin",
        "text_encoder/openvino_model.xml",
        "text_encoder_2/model.safetensors",
        "unet/diffusion_flax_model.msgpack",
        "unet/diffusion_pytorch_model.safetensors",
        "unet/model.onnx",
        "unet/model.onnx_data",
        "unet/openvino_model.bin",
        "unet/openvino_model.xml",
        "vae/diffusion_flax_model.msgpack",
        "vae/diffusion_pytorch_model.safetensors",
        "vae_1_0/config.json",
        "vae_1_0/diffusion_pytorch_model.fp16.safetensors",
        "vae_1_0/diffusion_pytorch_model.safetensors",
        "vae_decoder/config.json",
        "vae_decoder/model.onnx",
        "vae_encoder/config.json",
        "vae_encoder/model.onnx",
    ),
    "sdxl-inpaint": (
        ".gitattributes",
        "README.md",
        "text_encoder/model.safetensors",
        "text_encoder_2/model.safetensors",
        "unet/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ),
    "ltx-video": (
        ".gitattributes",
        "License.txt",
        "README.md",
        "ltx-video-2b-v0.9.safetensors",
        "ltx-video-2b-v0.9.1.safetensors",
        "media/trailer.gif",
    ),
    **{
        name: (
            ".gitattributes",
            "README.md",
            "ae.safetensors",
            single_file,
        )
        for name, single_file in FLUX_SINGLE_FILES.items()
    },
    # The Wan repositories' listings were not all found (docs/models.md): what was seen.
    "wan2.1-i2v-480p": (".gitattributes", "README.md"),
    "wan2.1-flf2v": (".gitattributes", "README.md"),
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


def _sdxl_pipeline(name: str, tokenizer: Any) -> Any:
    """SDXL base or its inpainting checkpoint: two CLIP text encoders (the second with a
    projection), a UNet conditioned on their pooled output and the image's size."""
    import torch
    from diffusers import (
        EulerDiscreteScheduler,
        StableDiffusionXLInpaintPipeline,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )

    from models.testing import SD_SCHEDULE, TEXT_WIDTH, _text_encoder

    torch.manual_seed(len(name))
    time_embedding = 8
    unet = UNet2DConditionModel(
        sample_size=128,
        in_channels=9 if name == "sdxl-inpaint" else 4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(8, 16, 16),
        down_block_types=("DownBlock2D", "DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D", "UpBlock2D"),
        cross_attention_dim=2 * TEXT_WIDTH,  # the two encoders' hidden states side by side
        attention_head_dim=8,
        norm_num_groups=8,
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=time_embedding,
        projection_class_embeddings_input_dim=6 * time_embedding + TEXT_WIDTH,
    )
    cls = StableDiffusionXLInpaintPipeline if name == "sdxl-inpaint" else StableDiffusionXLPipeline
    return cls(
        vae=_vae_by_8(),
        text_encoder=_text_encoder(),
        text_encoder_2=_text_encoder(with_projection=True),
        tokenizer=tokenizer,
        tokenizer_2=tokenizer,
        unet=unet,
        scheduler=EulerDiscreteScheduler(**SD_SCHEDULE, steps_offset=1),
    )


def _flux_pipeline(name: str, tokenizer: Any) -> Any:
    """FLUX.1 [schnell] / [dev] / Kontext / Fill: a flow transformer over 2x2-packed latents, CLIP
    and T5 text encoders, a VAE by 8 without quantisation convolutions."""
    import torch
    from diffusers import (
        AutoencoderKL,
        FlowMatchEulerDiscreteScheduler,
        FluxFillPipeline,
        FluxKontextPipeline,
        FluxPipeline,
        FluxTransformer2DModel,
    )
    from transformers import T5Config, T5EncoderModel

    from models.testing import TEXT_WIDTH, _text_encoder
    from models.testing_video import _t5_sized, t5_tokenizer

    torch.manual_seed(len(name))
    latent = 4
    packed = 4 * latent
    # Fill's transformer also takes the masked image's latents and the mask (16x16 a latent).
    in_channels = packed * 2 + 4 * 256 if name == "flux-fill" else packed
    transformer = FluxTransformer2DModel(
        patch_size=1,
        in_channels=in_channels,
        out_channels=packed,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=TEXT_WIDTH,
        pooled_projection_dim=TEXT_WIDTH,
        guidance_embeds=name != "flux-schnell",
        axes_dims_rope=(4, 4, 8),
    )
    # By 16, not FLUX's 8: a quarter of the tokens keeps a CPU test run of a 1024 px picture
    # (FLUX's native size) to seconds; the files are laid out as the real ones all the same.
    levels = 5
    vae = AutoencoderKL(
        block_out_channels=(8, 16, 16, 16, 16),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * levels,
        up_block_types=("UpDecoderBlock2D",) * levels,
        latent_channels=latent,
        norm_num_groups=8,
        use_quant_conv=False,
        use_post_quant_conv=False,
        mid_block_add_attention=False,
        shift_factor=0.1159,
        scaling_factor=0.3611,
    )
    t5_tokens = t5_tokenizer()
    cls = {"flux-kontext": FluxKontextPipeline, "flux-fill": FluxFillPipeline}.get(
        name, FluxPipeline
    )
    return cls(
        scheduler=FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=name != "flux-schnell"),
        vae=vae,
        text_encoder=_text_encoder(),
        tokenizer=tokenizer,
        text_encoder_2=T5EncoderModel(_t5_sized(T5Config, len(t5_tokens))),
        tokenizer_2=t5_tokens,
        transformer=transformer,
    )


def _reshard(folder: Path, stem: str, count: int) -> None:
    """Split `folder/stem.safetensors` into `count` shards with their index, as published."""
    from safetensors.torch import load_file, save_file

    single = folder / f"{stem}.safetensors"
    tensors = load_file(str(single))
    names = sorted(tensors)
    per_shard = -(-len(names) // count)
    weight_map: dict[str, str] = {}
    for index in range(count):
        shard = f"{stem}-{index + 1:05d}-of-{count:05d}.safetensors"
        part = names[index * per_shard : (index + 1) * per_shard]
        save_file({n: tensors[n].contiguous() for n in part}, str(folder / shard), {"format": "pt"})
        weight_map |= dict.fromkeys(part, shard)
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    index_file = folder / f"{stem}.safetensors.index.json"
    index_file.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    single.unlink()


def _sd_pipeline(name: str, tokenizer: Any) -> Any:
    import torch
    from diffusers import EulerDiscreteScheduler

    from models.testing import SD_SCHEDULE, _unet, pix2pix_pipeline, sd_pipeline, upscaler_pipeline

    torch.manual_seed(len(name))
    if name == "sd-turbo":
        scheduler = EulerDiscreteScheduler(**SD_SCHEDULE, timestep_spacing="trailing")
        return sd_pipeline(tokenizer, _unet(4), _vae_by_8(), scheduler)
    if name == "instruct-pix2pix":
        return pix2pix_pipeline(tokenizer, _vae_by_8())
    if name == "sd-x4-upscaler":
        return upscaler_pipeline(tokenizer)
    raise ValueError(f"no tiny stand-in of the preset {name!r}")


def build_preset_files(name: str, work: Path) -> dict[str, bytes]:
    """The tiny repository of preset `name`: path -> bytes, as the stand-in hub serves it."""
    import torch
    from transformers import CLIPTokenizer

    from models.testing import write_tokenizer
    from models.testing_video import build_wan_image_to_video, ltx_image_to_video

    preset = BY_NAME[name]
    folder = work / name
    if name.startswith("wan2.1-"):
        # 64 px a token, not Wan 2.1's 16 (8 px by its VAE, 2 x 2 latent pixels a token): the
        # VAE packs 8 x 8 pixels first (as Wan 2.2's packs 2 x 2) and the transformer takes one
        # latent pixel a token, so a clip at the presets' own 480P and 720P sizes, frame counts
        # and steps takes seconds on a CPU, not minutes (the VAE's full-size work dominated).
        build_wan_image_to_video(
            folder, first_last_frame=name == "wan2.1-flf2v", vae_patch=8, patch=(1, 1, 1)
        )
        return _files(name, folder)
    if name == "ltx-video":
        pipe = ltx_image_to_video(seed=3, real_compression=True)
    else:
        write_tokenizer(work / "tokenizer-source")
        tokenizer = CLIPTokenizer.from_pretrained(str(work / "tokenizer-source"))
        if name in ("sdxl", "sdxl-inpaint"):
            pipe = _sdxl_pipeline(name, tokenizer)
        elif name in FLUX_PRESETS:
            pipe = _flux_pipeline(name, tokenizer)
        else:
            pipe = _sd_pipeline(name, tokenizer)
    if preset.variant == "fp16":
        pipe.to(torch.float16)  # the real files are half precision
    elif preset.dtype == "bfloat16" and name in FLUX_PRESETS:
        pipe.to(torch.bfloat16)  # FLUX.1 is published in bf16 only
    pipe.save_pretrained(str(folder), safe_serialization=True, variant=preset.variant)
    if name in FLUX_PRESETS:
        for component, (stem, count) in FLUX_SHARDS.items():
            _reshard(folder / component, stem, count)
    return _files(name, folder)


def _files(name: str, folder: Path) -> dict[str, bytes]:
    """The saved folder's files, its index as the real one, and the real repository's others."""
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
