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
    "instruct-pix2pix",
    "sdxl-inpaint",
    "sd-x4-upscaler",
    "ltx-video",
    "wan2.1-i2v-480p",
    "wan2.1-flf2v",
)

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
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    from models.testing import BOS_ID, EOS_ID, SD_SCHEDULE, TEXT_WIDTH, VOCAB_SIZE

    torch.manual_seed(len(name))
    text = CLIPTextConfig(
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=EOS_ID,
        hidden_size=TEXT_WIDTH,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        max_position_embeddings=32,
        vocab_size=VOCAB_SIZE,
        projection_dim=TEXT_WIDTH,
    )
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
        text_encoder=CLIPTextModel(text),
        text_encoder_2=CLIPTextModelWithProjection(text),
        tokenizer=tokenizer,
        tokenizer_2=tokenizer,
        unet=unet,
        scheduler=EulerDiscreteScheduler(**SD_SCHEDULE, steps_offset=1),
    )


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
        # Wan 2.1's own compression (8 px, 4 frames): at the presets' 480P and 720P sizes a
        # CPU takes minutes, so these stand in for the layout and are not run end to end.
        build_wan_image_to_video(folder, first_last_frame=name == "wan2.1-flf2v")
        return _files(name, folder)
    if name == "ltx-video":
        pipe = ltx_image_to_video(seed=3, real_compression=True)
    else:
        write_tokenizer(work / "tokenizer-source")
        tokenizer = CLIPTokenizer.from_pretrained(str(work / "tokenizer-source"))
        if name in ("sdxl", "sdxl-inpaint"):
            pipe = _sdxl_pipeline(name, tokenizer)
        else:
            pipe = _sd_pipeline(name, tokenizer)
    if preset.variant == "fp16":
        pipe.to(torch.float16)  # the real files are half precision
    pipe.save_pretrained(str(folder), safe_serialization=True, variant=preset.variant)
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
