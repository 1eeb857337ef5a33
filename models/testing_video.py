"""Tiny random-weight video models of the classes the video pipelines use, for tests on the CPU.

Each builder makes the real diffusers/transformers classes with tiny configurations, saves them
with `save_pretrained` into a folder laid out like the published model (a `model_index.json` and
one subfolder per component), and `video_registry_entries` gives the registry tables that point
at them. The pipelines then load and run them through the same code as real weights.

- `build_wan_image_to_video`: `WanImageToVideoPipeline` as Wan 2.1 I2V is published
  (`WanTransformer3DModel` with image cross-attention, `AutoencoderKLWan`, `UMT5EncoderModel`, a
  T5 tokenizer, `CLIPVisionModel` and its `CLIPImageProcessor`).
- `first_last_frame=True`: the same class as Wan 2.1 FLF2V is published: the transformer's
  image embedder has positions for two images (`pos_embed_seq_len`), first and last frame.

- `build_ltx_image_to_video`: `LTXImageToVideoPipeline` as LTX-Video is published
  (`LTXVideoTransformer3DModel`, `AutoencoderKLLTXVideo`, `T5EncoderModel`, a T5 tokenizer): a
  second image-to-video family, with a VAE that packs 8 frames (4 in the tiny one) and 32 px.

The tokenizer is built from a vocabulary generated here (no download): the model's weights are
random, so only the tokenizer's shape matters, not its words.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

# The tiny models' geometry, which their registry entries repeat (the pipelines read it there).
TINY_FPS = 8
TINY_MAX_FRAMES = 9  # two latent frames after the first: 4k+1 with k=2
TINY_SIDE = 32  # the side of the square of the area the model makes (its `resolution`)
TEXT_DIM = 32
CLIP_IMAGE_SIZE = 32
CLIP_PATCH = 8
CLIP_TOKENS = (CLIP_IMAGE_SIZE // CLIP_PATCH) ** 2 + 1  # patches plus the class token
IMAGE_DIM = 8  # CLIP's hidden size, which the transformer's image projection takes
VOCAB_WORDS = (
    "a", "the", "of", "and", "in", "on", "to", "with", "slow", "fast", "zoom", "pan", "camera",
    "sea", "sky", "sun", "dawn", "dusk", "night", "light", "blue", "red", "orange", "calm", "city",
)  # fmt: skip


def t5_tokenizer() -> Any:
    """A T5 (Unigram) tokenizer over single characters and a few words, scored like
    SentencePiece pieces."""
    from transformers import T5Tokenizer

    pieces = ["<pad>", "</s>", "<unk>", "▁"]
    pieces += [f"▁{word}" for word in VOCAB_WORDS]
    pieces += list(string.ascii_lowercase + string.digits + string.punctuation)
    vocab = [(piece, 0.0 if index < 3 else -float(index)) for index, piece in enumerate(pieces)]
    return T5Tokenizer(vocab=vocab, extra_ids=0)


def _t5_sized(config_class: Any, vocab_size: int) -> Any:
    """A one-layer T5-family encoder configuration (T5 for LTX, UMT5 for Wan)."""
    return config_class(
        vocab_size=vocab_size,
        d_model=TEXT_DIM,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_heads=2,
        relative_attention_num_buckets=8,
    )


def build_wan_image_to_video(
    folder: Path,
    first_last_frame: bool = False,
    seed: int = 0,
    vae_patch: int | None = None,
    patch: tuple[int, int, int] = (1, 2, 2),
) -> Path:
    """Save a tiny `WanImageToVideoPipeline` (image-to-video, or first-last-frame) in `folder`.

    Its VAE compresses by 8 px and 4 frames as Wan 2.1's, and its transformer takes 2 x 2
    latent pixels a token (`patch`) as Wan 2.1's. With `vae_patch` the VAE first packs
    `vae_patch` x `vae_patch` pixels into channels (as Wan 2.2's VAE packs 2 x 2), compressing
    by `8 * vae_patch` px: fewer tokens and far less convolution at the same picture size."""
    import torch
    from diffusers import (
        AutoencoderKLWan,
        FlowMatchEulerDiscreteScheduler,
        WanImageToVideoPipeline,
        WanTransformer3DModel,
    )
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        CLIPVisionModel,
        UMT5Config,
        UMT5EncoderModel,
    )

    tokenizer = t5_tokenizer()
    torch.manual_seed(seed)
    packing: dict[str, Any] = {}
    if vae_patch:
        channels = 3 * vae_patch * vae_patch
        packing = {
            "patch_size": vae_patch,
            "in_channels": channels,
            "out_channels": channels,
            "scale_factor_spatial": 8 * vae_patch,
        }
    vae = AutoencoderKLWan(
        base_dim=8,
        z_dim=4,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],
        latents_mean=[0.0] * 4,
        latents_std=[1.0] * 4,
        **packing,
    )
    text_encoder = UMT5EncoderModel(_t5_sized(UMT5Config, len(tokenizer)))
    transformer = WanTransformer3DModel(
        patch_size=patch,
        num_attention_heads=2,
        attention_head_dim=8,
        in_channels=4 + 4 + 4,  # noise latents, condition latents, the 4-frame condition mask
        out_channels=4,
        text_dim=TEXT_DIM,
        freq_dim=32,
        ffn_dim=32,
        num_layers=2,
        image_dim=IMAGE_DIM,
        added_kv_proj_dim=16,  # Wan 2.1 I2V attends to the image with its own key/value
        rope_max_seq_len=32,
        pos_embed_seq_len=2 * CLIP_TOKENS if first_last_frame else None,
    )
    image_encoder = CLIPVisionModel(
        CLIPVisionConfig(
            hidden_size=IMAGE_DIM,
            intermediate_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=CLIP_IMAGE_SIZE,
            patch_size=CLIP_PATCH,
        )
    )
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": CLIP_IMAGE_SIZE},
        crop_size={"height": CLIP_IMAGE_SIZE, "width": CLIP_IMAGE_SIZE},
    )
    pipe: Any = WanImageToVideoPipeline(
        tokenizer=tokenizer,
        text_encoder=text_encoder,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0),
        image_processor=image_processor,
        image_encoder=image_encoder,
        transformer=transformer,
    )
    folder.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(str(folder))
    return folder


def build_ltx_image_to_video(folder: Path, seed: int = 0) -> Path:
    """Save a tiny `LTXImageToVideoPipeline` in `folder` (spatial and temporal factor 4)."""
    pipe = ltx_image_to_video(seed)
    folder.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(str(folder))
    return folder


def ltx_image_to_video(seed: int = 0, real_compression: bool = False) -> Any:
    """A tiny `LTXImageToVideoPipeline`: its VAE by 4 in space and time, or with
    `real_compression` by 32 px and 8 frames as LTX-Video 0.9's (4 px patches, three
    spatio-temporal scalings), which runs at that model's sizes and frame counts."""
    import torch
    from diffusers import (
        AutoencoderKLLTXVideo,
        FlowMatchEulerDiscreteScheduler,
        LTXImageToVideoPipeline,
        LTXVideoTransformer3DModel,
    )
    from transformers import T5Config, T5EncoderModel

    tokenizer = t5_tokenizer()
    torch.manual_seed(seed)
    transformer = LTXVideoTransformer3DModel(
        in_channels=8,
        out_channels=8,
        patch_size=1,
        patch_size_t=1,
        num_attention_heads=2,
        attention_head_dim=8,
        cross_attention_dim=16,
        num_layers=1,
        caption_channels=TEXT_DIM,
    )
    if real_compression:
        compression: dict[str, Any] = {"patch_size": 4}
    else:
        two_scalings = (True, True, False, False)  # the full model scales at three levels
        compression = {
            "spatio_temporal_scaling": two_scalings,
            "decoder_spatio_temporal_scaling": two_scalings,
            "decoder_inject_noise": (False,) * 5,
            "upsample_residual": (False,) * 4,
            "upsample_factor": (1,) * 4,
            "patch_size": 1,
        }
    vae = AutoencoderKLLTXVideo(
        latent_channels=8,
        block_out_channels=(8, 8, 8, 8),
        decoder_block_out_channels=(8, 8, 8, 8),
        layers_per_block=(1, 1, 1, 1, 1),
        decoder_layers_per_block=(1, 1, 1, 1, 1),
        patch_size_t=1,
        **compression,
    )
    text_encoder = T5EncoderModel(_t5_sized(T5Config, len(tokenizer)))
    return LTXImageToVideoPipeline(
        transformer=transformer,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder=text_encoder,
        tokenizer=tokenizer,
    )


def build_tiny_ltx_models(folder: Path) -> str:
    """Save the tiny LTX model under `folder`; return a registry serving animate with it (at
    64 px: LTX's pipeline wants sizes in multiples of 32)."""
    build_ltx_image_to_video(folder / "tiny-ltx")
    return TINY_LTX_REGISTRY


def build_tiny_video_models(folder: Path) -> str:
    """Save both tiny Wan models under `folder`; return their registry tables (TOML, folders
    relative to `folder`), to write as a registry file there or append to one."""
    build_wan_image_to_video(folder / "tiny-wan-i2v")
    build_wan_image_to_video(folder / "tiny-wan-flf2v", first_last_frame=True, seed=1)
    return TINY_VIDEO_REGISTRY


# The tiny models' geometry (Wan 2.1 itself: 16 fps, 81 frames, the area of 480x832 or 720x1280,
# so `resolution` 632 or 960; see docs/models.md). No classifier-free guidance: one transformer
# pass per step.
def _tiny_options(resolution: int) -> str:
    return f"""\
fps = {TINY_FPS}
max_frames = {TINY_MAX_FRAMES}
resolution = {resolution}
steps = 2
guidance = 1.0
max_sequence_length = 16
"""


TINY_VIDEO_REGISTRY = f"""\
[operations.animate]
model = "sfumato/tiny-wan-i2v"
folder = "tiny-wan-i2v"
pipeline = "WanImageToVideoPipeline"
dtype = "float32"
memory_gb = 0.01
[operations.animate.options]
{_tiny_options(TINY_SIDE)}
[operations.transition]
model = "sfumato/tiny-wan-flf2v"
folder = "tiny-wan-flf2v"
pipeline = "WanImageToVideoPipeline"
dtype = "float32"
memory_gb = 0.01
[operations.transition.options]
{_tiny_options(TINY_SIDE)}"""

TINY_LTX_REGISTRY = f"""\
[operations.animate]
model = "sfumato/tiny-ltx-video"
folder = "tiny-ltx"
pipeline = "LTXImageToVideoPipeline"
dtype = "float32"
memory_gb = 0.01
[operations.animate.options]
{_tiny_options(64)}"""
