"""The preset catalogue: for each operation a fast and a quality model, ready to `pull`.

A preset names a public Hugging Face repository at a pinned commit, the files to fetch from it
(one precision only: the fp16 or bf16 safetensors where the repository publishes them, never
every variant, never the single-file checkpoints beside the diffusers folders), and the registry
entry that serves the operation with it. docs/models.md has the table and says which preset was
checked against which public source. Builtin presets download nothing: they name the builtin
pipeline that serves the operation when the registry has no entry for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Speed = Literal["fast", "quality"]


@dataclass(frozen=True)
class Preset:
    name: str
    operation: str
    speed: Speed
    summary: str
    licence: str
    repo: str | None = None  # None: builtin, nothing to download
    revision: str = ""
    patterns: tuple[str, ...] = ()
    pipeline: str = ""
    family: str = "other"
    dtype: str = "float16"
    variant: str | None = None
    batch_limit: int = 1
    memory_gb: float = 0.0  # on the device at native size and batch 1
    download_gb: float = 0.0  # the files the patterns select
    smallest_gpu: str = ""
    gated: bool = False
    offload: str = "none"
    # What a create may ask (`steps`, `guidance`); None: the family's ranges.
    steps_range: tuple[int, int] | None = None
    guidance_range: tuple[float, float] | None = None
    # The registry's `tuning` table (models/tuning.py): what is known to help it on CUDA.
    tuning: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def builtin(self) -> bool:
        return self.repo is None

    @property
    def folder(self) -> str:
        """Its folder in the models directory."""
        return self.name

    def registry_entry(self) -> dict[str, Any]:
        """The registry table `pull` writes for the preset's operation."""
        entry: dict[str, Any] = {
            "preset": self.name,
            "model": self.repo,
            "folder": self.folder,
            "pipeline": self.pipeline,
            "family": self.family,
            "dtype": self.dtype,
        }
        if self.variant:
            entry["variant"] = self.variant
        entry |= {"batch_limit": self.batch_limit, "memory_gb": self.memory_gb}
        if self.offload != "none":
            entry["offload"] = self.offload
        if self.steps_range:
            entry["steps_range"] = list(self.steps_range)
        if self.guidance_range:
            entry["guidance_range"] = list(self.guidance_range)
        if self.tuning:
            entry["tuning"] = dict(self.tuning)
        if self.options:
            entry["options"] = dict(self.options)
        return entry


def _components(
    weights: dict[str, str], configs: tuple[str, ...] = ("scheduler", "tokenizer")
) -> tuple[str, ...]:
    """Patterns of a diffusers folder: model_index.json, each weighted component's config.json
    and the weight files named (a file, or a glob for shards), every file of `configs`."""
    patterns = ["model_index.json"]
    for component, files in weights.items():
        patterns += [f"{component}/config.json", f"{component}/{files}"]
    patterns += [f"{folder}/*" for folder in configs]
    return tuple(patterns)


_SD_FP16 = {
    "unet": "diffusion_pytorch_model.fp16.safetensors",
    "vae": "diffusion_pytorch_model.fp16.safetensors",
    "text_encoder": "model.fp16.safetensors",
}
_SDXL_FP16 = {**_SD_FP16, "text_encoder_2": "model.fp16.safetensors"}
_SDXL_CONFIGS = ("scheduler", "tokenizer", "tokenizer_2")
# FLUX.1 publishes bf16 only, the transformer and T5 sharded (with their index files).
_FLUX = {
    "transformer": "diffusion_pytorch_model*.safetensors*",
    "vae": "diffusion_pytorch_model.safetensors",
    "text_encoder": "model.safetensors",
    "text_encoder_2": "model*.safetensors*",
}
_FLUX_CONFIGS = ("scheduler", "tokenizer", "tokenizer_2")
_WAN_I2V = {
    "transformer": "diffusion_pytorch_model*.safetensors*",
    "vae": "diffusion_pytorch_model.safetensors",
    "text_encoder": "model*.safetensors*",
    "image_encoder": "model.safetensors",
}
_WAN_CONFIGS = ("scheduler", "tokenizer", "image_processor")


# What diffusers' guide to faster text-to-image inference finds to help a UNet model on CUDA
# (https://huggingface.co/docs/diffusers/tutorials/fast_diffusion): channels-last memory and
# torch.compile of the UNet (compiled on CUDA only, at warm-up). Not its fused QKV projections:
# a LoRA adapter (docs/models.md) is loaded into the unfused ones, which fusing bypasses.
_COMPILED_UNET: dict[str, Any] = {"compile": "denoiser", "channels_last": True}


PRESETS: tuple[Preset, ...] = (
    # --- generate ---------------------------------------------------------------------------
    Preset(
        name="sd-turbo",
        operation="generate",
        speed="fast",
        summary="SD-Turbo: 1-4 steps at 512 px; runs on a CPU in seconds",
        licence="sai-nc-community",
        repo="stabilityai/sd-turbo",
        revision="b261bac6fd2cf515557d5d0707481eafa0485ec2",
        patterns=_components(_SD_FP16),
        pipeline="StableDiffusionPipeline",
        family="sd15",
        variant="fp16",
        batch_limit=4,
        # Measured on the architecture with random weights: 3.05 GiB allocated at batch 1, 4.45
        # at batch 4 (docs/benchmarks.md); the card's sizes add the CUDA context (estimated).
        memory_gb=3.1,
        download_gb=2.6,
        smallest_gpu="4 GB at batch 1, tight (6 GB for batch 4), or a CPU",
        # A distilled model: guidance off, and more steps do not help.
        steps_range=(1, 4),
        guidance_range=(0.0, 0.0),
        tuning=_COMPILED_UNET,
        options={"steps": {"low": 1, "medium": 2, "high": 4}, "guidance": 0.0, "resolution": 512},
    ),
    Preset(
        name="sdxl",
        operation="generate",
        speed="quality",
        summary="Stable Diffusion XL base 1.0 at 1024 px",
        licence="openrail++",
        repo="stabilityai/stable-diffusion-xl-base-1.0",
        revision="462165984030d82259a11f4367a4eed129e94a7b",
        patterns=_components(_SDXL_FP16, _SDXL_CONFIGS),
        pipeline="StableDiffusionXLPipeline",
        family="sdxl",
        variant="fp16",
        batch_limit=4,
        memory_gb=10.0,
        download_gb=6.9,
        smallest_gpu="12 GB (24 GB for batch 4)",
        # A batch of four 1024 px images decoded at once is the peak: one at a time instead.
        tuning=_COMPILED_UNET | {"compile": "denoiser+vae", "vae_slicing": True},
    ),
    Preset(
        name="flux-schnell",
        operation="generate",
        speed="fast",
        summary="FLUX.1 [schnell]: 4 steps at 1024 px",
        licence="apache-2.0",
        repo="black-forest-labs/FLUX.1-schnell",
        revision="741f7c3ce8b383c54771c7003378a50191e9efe9",
        patterns=_components(_FLUX, _FLUX_CONFIGS),
        pipeline="FluxPipeline",
        family="flux",
        dtype="bfloat16",
        batch_limit=2,
        memory_gb=34.0,
        download_gb=33.7,
        smallest_gpu="40 GB (24 GB with offload, slower)",
        steps_range=(1, 4),
        guidance_range=(0.0, 0.0),
        options={"steps": {"low": 2, "medium": 4, "high": 4}, "guidance": 0.0},
    ),
    Preset(
        name="flux-dev",
        operation="generate",
        speed="quality",
        summary="FLUX.1 [dev]: 28 steps at 1024 px",
        licence="flux-1-dev-non-commercial",
        repo="black-forest-labs/FLUX.1-dev",
        revision="3de623fc3c33e44ffbe2bad470d0f45bccf2eb21",
        patterns=_components(_FLUX, _FLUX_CONFIGS),
        pipeline="FluxPipeline",
        family="flux",
        dtype="bfloat16",
        batch_limit=2,
        memory_gb=34.0,
        download_gb=33.7,
        smallest_gpu="40 GB (24 GB with offload, slower)",
        gated=True,
    ),
    # --- edit -------------------------------------------------------------------------------
    Preset(
        name="instruct-pix2pix",
        operation="edit",
        speed="fast",
        summary="InstructPix2Pix: edits by instruction at 512 px",
        licence="mit",
        repo="timbrooks/instruct-pix2pix",
        revision="31519b5cb02a7fd89b906d88731cd4d6a7bbf88d",
        # Only fp32 safetensors are published (beside .bin): fetched once, loaded in fp16.
        patterns=_components(
            {
                "unet": "diffusion_pytorch_model.safetensors",
                "vae": "diffusion_pytorch_model.safetensors",
                "text_encoder": "model.safetensors",
            }
        ),
        pipeline="StableDiffusionInstructPix2PixPipeline",
        family="sd15",
        batch_limit=4,
        memory_gb=3.0,
        download_gb=4.3,
        smallest_gpu="6 GB",
    ),
    Preset(
        name="flux-kontext",
        operation="edit",
        speed="quality",
        summary="FLUX.1 Kontext [dev]: edits by instruction at 1024 px",
        licence="flux-1-dev-non-commercial",
        repo="black-forest-labs/FLUX.1-Kontext-dev",
        revision="af58063aa431f4d2bbc11ae46f57451d4416a170",
        patterns=_components(_FLUX, _FLUX_CONFIGS),
        pipeline="FluxKontextPipeline",
        family="flux",
        dtype="bfloat16",
        batch_limit=1,
        memory_gb=36.0,
        download_gb=33.7,
        smallest_gpu="48 GB (24 GB with offload, slower)",
        gated=True,
    ),
    # --- reframe ----------------------------------------------------------------------------
    Preset(
        name="sdxl-inpaint",
        operation="reframe",
        speed="fast",
        summary="SDXL 1.0 inpainting 0.1: outpainting at 1024 px",
        licence="openrail++",
        repo="diffusers/stable-diffusion-xl-1.0-inpainting-0.1",
        revision="115134f363124c53c7d878647567d04daf26e41e",
        patterns=_components(_SDXL_FP16, _SDXL_CONFIGS),
        pipeline="StableDiffusionXLInpaintPipeline",
        family="sdxl",
        variant="fp16",
        batch_limit=4,
        memory_gb=10.0,
        download_gb=6.9,
        smallest_gpu="12 GB (24 GB for batch 4)",
    ),
    Preset(
        name="flux-fill",
        operation="reframe",
        speed="quality",
        summary="FLUX.1 Fill [dev]: outpainting at 1024 px",
        licence="flux-1-dev-non-commercial",
        repo="black-forest-labs/FLUX.1-Fill-dev",
        revision="358293da0354175698b67ec8299acf928313a78a",
        patterns=_components(_FLUX, _FLUX_CONFIGS),
        pipeline="FluxFillPipeline",
        family="flux",
        dtype="bfloat16",
        batch_limit=2,
        memory_gb=34.0,
        download_gb=33.7,
        smallest_gpu="40 GB (24 GB with offload, slower)",
        gated=True,
        options={"guidance": 30.0},
    ),
    # --- upscale ----------------------------------------------------------------------------
    Preset(
        name="realesrgan",
        operation="upscale",
        speed="fast",
        summary="Real-ESRGAN x4 (builtin, ncnn on the CPU): serves upscale with no model entry",
        licence="bsd-3-clause",
        pipeline="BuiltinUpscale",
        smallest_gpu="none (CPU)",
    ),
    Preset(
        name="sd-x4-upscaler",
        operation="upscale",
        speed="quality",
        summary="Stable Diffusion x4 upscaler, tiled (128 px tiles in, 512 px out)",
        licence="openrail++",
        repo="stabilityai/stable-diffusion-x4-upscaler",
        revision="572c99286543a273bfd17fac263db5a77be12c4c",
        patterns=_components(_SD_FP16, ("scheduler", "low_res_scheduler", "tokenizer")),
        pipeline="StableDiffusionUpscalePipeline",
        family="sd15",
        variant="fp16",
        batch_limit=4,
        memory_gb=4.0,
        download_gb=1.7,
        smallest_gpu="8 GB",
        options={"steps": 20, "guidance": 9.0, "noise_level": 20, "tile": 128, "overlap": 16},
    ),
    # --- animate ----------------------------------------------------------------------------
    Preset(
        name="ltx-video",
        operation="animate",
        speed="fast",
        summary="LTX-Video 0.9 (2B): 24 fps at about 768x512",
        licence="ltx-video-open-weights",
        repo="Lightricks/LTX-Video",
        revision="0459e8f6cfec8674ba6ba46446375c6813ff9ec2",
        # The diffusers folders as published (fp32); never the single-file checkpoints beside.
        patterns=_components(
            {
                "transformer": "diffusion_pytorch_model*.safetensors*",
                "vae": "diffusion_pytorch_model.safetensors",
                "text_encoder": "model*.safetensors*",
            }
        ),
        pipeline="LTXImageToVideoPipeline",
        dtype="bfloat16",
        memory_gb=18.0,
        download_gb=26.0,
        smallest_gpu="24 GB",
        options={"fps": 24, "max_frames": 257, "resolution": 627, "steps": 40, "guidance": 3.0},
    ),
    Preset(
        name="wan2.1-i2v-480p",
        operation="animate",
        speed="quality",
        summary="Wan 2.1 image-to-video 14B, 480P: 16 fps, 81 frames a call",
        licence="apache-2.0",
        repo="Wan-AI/Wan2.1-I2V-14B-480P-Diffusers",
        revision="b184e23a8a16b20f108f727c902e769e873ffc73",
        patterns=_components(_WAN_I2V, _WAN_CONFIGS),
        pipeline="WanImageToVideoPipeline",
        dtype="bfloat16",
        memory_gb=48.0,
        download_gb=82.0,
        smallest_gpu="80 GB (48 GB with offload, slower)",
        options={"fps": 16, "max_frames": 81, "resolution": 632, "steps": 40, "guidance": 5.0},
    ),
    # --- transition -------------------------------------------------------------------------
    Preset(
        name="rife",
        operation="transition",
        speed="fast",
        summary="RIFE motion in-betweens and a morph (builtin, CPU): serves transition "
        "with no model entry",
        licence="mit",
        pipeline="BuiltinTransition",
        smallest_gpu="none (CPU)",
    ),
    Preset(
        name="wan2.1-flf2v",
        operation="transition",
        speed="quality",
        summary="Wan 2.1 first-last-frame-to-video 14B, 720P: 16 fps, 81 frames",
        licence="apache-2.0",
        repo="Wan-AI/Wan2.1-FLF2V-14B-720P-diffusers",
        revision="17c30769b1e0b5dcaa1799b117bf20a9c31f59d7",
        patterns=_components(_WAN_I2V, _WAN_CONFIGS),
        pipeline="WanImageToVideoPipeline",
        dtype="bfloat16",
        memory_gb=60.0,
        download_gb=82.0,
        smallest_gpu="80 GB",
        options={"fps": 16, "max_frames": 81, "resolution": 960, "steps": 40, "guidance": 5.5},
    ),
)

BY_NAME = {preset.name: preset for preset in PRESETS}
# The presets' licences that forbid commercial use (the model cards say so): named wherever a
# preset is suggested, so that nobody builds a product on one unawares.
NON_COMMERCIAL_LICENCES = frozenset({"sai-nc-community", "flux-1-dev-non-commercial"})


def licence_terms(licence: str) -> str:
    """A few words on what a preset's licence allows, for a suggestion to pull it."""
    if licence in NON_COMMERCIAL_LICENCES:
        return "is non-commercial: research and personal use only"
    return "allows commercial use (read its model card)"


OPERATIONS = ("generate", "edit", "reframe", "upscale", "animate", "transition")
# The preset the embedded server's greeting suggests: real text-to-image on a laptop's CPU.
CPU_PRESET = "sd-turbo"


class UnknownPreset(LookupError):
    pass


def preset_named(name: str) -> Preset:
    try:
        return BY_NAME[name]
    except KeyError:
        known = ", ".join(sorted(BY_NAME))
        raise UnknownPreset(f"no preset {name!r} (the presets: {known})") from None
