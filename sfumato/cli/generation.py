"""`sfumato generate | edit | reframe | upscale | animate | transition`: a job on a server,
followed with a progress bar, its images or video written to files (see remote.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sfumato.cli.common import JsonOption
from sfumato.cli.remote import (
    ApiKeyOption,
    ApiUrlOption,
    OutputOption,
    PreviewOption,
    choice,
    connected,
    finish,
)

CURRENT_DIRECTORY = Path(".")
AudioOption = Annotated[
    bool, typer.Option("--audio/--no-audio", help="An AAC soundtrack (default) or none.")
]
NegativePromptOption = Annotated[
    str | None, typer.Option("--negative-prompt", help="What the motion should avoid.")
]
SeedOption = Annotated[
    int | None,
    typer.Option(help="The noise seed, 0 to 4294967295 (default random; printed when done)."),
]
NegativeOption = Annotated[
    str | None, typer.Option("--negative", help="What the picture should not show.")
]
StepsOption = Annotated[
    int | None, typer.Option(help="Denoising steps, within the model's range (GET /v1/models).")
]
GuidanceOption = Annotated[
    float | None, typer.Option(help="Guidance (CFG) scale, within the model's range.")
]
ModelOption = Annotated[
    str | None, typer.Option(help="The model to run (default: the operation's default).")
]
LoraOption = Annotated[
    list[str] | None,
    typer.Option(help="A LoRA adapter as NAME or NAME:SCALE (scale 0 to 2); up to 4."),
]


def adapters(values: list[str] | None) -> list[str | tuple[str, float]] | None:
    """`--lora NAME[:SCALE]` values as the client takes them."""
    if not values:
        return None
    parsed: list[str | tuple[str, float]] = []
    for value in values:
        name, separator, scale = value.rpartition(":")
        if not separator:
            parsed.append(value)
            continue
        try:
            parsed.append((name, float(scale)))
        except ValueError:
            raise typer.BadParameter(f"{value!r}: the scale after ':' must be a number") from None
    return parsed


VideoResolutionOption = Annotated[
    str | None,
    typer.Option(
        help="480p or 720p (default 720p).", callback=choice("VideoResolution", "--resolution")
    ),
]


def generate(
    prompt: str,
    ratio: Annotated[
        str | None,
        typer.Option(
            help="Aspect ratio (default 1:1).", callback=choice("GenerateAspectRatio", "--ratio")
        ),
    ] = None,
    quality: Annotated[
        str | None,
        typer.Option(
            help="low, medium or high (default medium).", callback=choice("Quality", "--quality")
        ),
    ] = None,
    resolution: Annotated[
        str | None,
        typer.Option(
            help="1K, 2K or 4K (default 1K).", callback=choice("ImageResolution", "--resolution")
        ),
    ] = None,
    variations: Annotated[int | None, typer.Option(help="1 to 4 images.")] = None,
    style: Annotated[str | None, typer.Option(help="A saved style's id.")] = None,
    ref: Annotated[
        list[str] | None,
        typer.Option(help="A reference image: a local file (uploaded first), URL or id."),
    ] = None,
    seed: SeedOption = None,
    negative: NegativeOption = None,
    steps: StepsOption = None,
    guidance: GuidanceOption = None,
    model: ModelOption = None,
    lora: LoraOption = None,
    output: OutputOption = CURRENT_DIRECTORY,
    preview: PreviewOption = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Generate images from a prompt and save them."""
    loras = adapters(lora)
    with connected(api_url, api_key) as client:
        job = client.images.generate(
            prompt,
            aspect_ratio=ratio,
            quality=quality,
            resolution=resolution,
            style_id=style,
            references=ref or None,
            variations=variations,
            seed=seed,
            negative_prompt=negative,
            steps=steps,
            guidance=guidance,
            model=model,
            loras=loras,
        )
        finish(client, job, output, preview, as_json)


def edit(
    image_id: str,
    prompt: str,
    ref: Annotated[
        list[str] | None,
        typer.Option(help="A reference image: a local file (uploaded first), URL or id."),
    ] = None,
    style: Annotated[str | None, typer.Option(help="A saved style's id.")] = None,
    mask: Annotated[
        str | None,
        typer.Option(
            help="Change only the white of this mask (the image's size): a local file "
            "(uploaded first), URL or id."
        ),
    ] = None,
    seed: SeedOption = None,
    negative: NegativeOption = None,
    steps: StepsOption = None,
    guidance: GuidanceOption = None,
    model: ModelOption = None,
    lora: LoraOption = None,
    output: OutputOption = CURRENT_DIRECTORY,
    preview: PreviewOption = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Edit a prior image (a job id or an image id) with a prompt."""
    loras = adapters(lora)
    with connected(api_url, api_key) as client:
        job = client.images.edit(
            image_id,
            prompt,
            references=ref or None,
            style_id=style,
            seed=seed,
            negative_prompt=negative,
            steps=steps,
            guidance=guidance,
            model=model,
            loras=loras,
            mask=mask,
        )
        finish(client, job, output, preview, as_json)


def reframe(
    image_id: str,
    ratio: Annotated[
        str,
        typer.Option(help="The new aspect ratio.", callback=choice("ResizeAspectRatio", "--ratio")),
    ],
    resolution: Annotated[
        str | None,
        typer.Option(
            help="1K, 2K or 4K (default 1K).", callback=choice("ImageResolution", "--resolution")
        ),
    ] = None,
    seed: SeedOption = None,
    output: OutputOption = CURRENT_DIRECTORY,
    preview: PreviewOption = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reframe a prior image to another aspect ratio."""
    with connected(api_url, api_key) as client:
        finish(
            client,
            client.images.resize(image_id, ratio, resolution, seed=seed),
            output,
            preview,
            as_json,
        )


def upscale(
    image_id: str,
    resolution: Annotated[
        str, typer.Option(help="1K, 2K or 4K.", callback=choice("ImageResolution", "--resolution"))
    ],
    seed: SeedOption = None,
    output: OutputOption = CURRENT_DIRECTORY,
    preview: PreviewOption = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Upscale a prior image."""
    with connected(api_url, api_key) as client:
        finish(
            client, client.images.upscale(image_id, resolution, seed=seed), output, preview, as_json
        )


def animate(
    image: str,
    prompt: str,
    duration: Annotated[float | None, typer.Option(help="Seconds, 1 to 15 (default 6).")] = None,
    resolution: VideoResolutionOption = None,
    audio: AudioOption = True,
    negative_prompt: NegativePromptOption = None,
    seed: SeedOption = None,
    output: OutputOption = CURRENT_DIRECTORY,
    preview: PreviewOption = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Animate one image (a local file, uploaded first, a URL or an id) into a clip."""
    with connected(api_url, api_key) as client:
        job = client.videos.image_to_video(
            image,
            prompt,
            duration=duration,
            resolution=resolution,
            audio=audio,
            negative_prompt=negative_prompt,
            seed=seed,
        )
        finish(client, job, output, preview, as_json)


def transition(
    start: str,
    end: str,
    prompt: str,
    duration: Annotated[float | None, typer.Option(help="Seconds, 4 to 15 (default 6).")] = None,
    ratio: Annotated[
        str | None,
        typer.Option(
            help="Aspect ratio (default auto: the start frame's).",
            callback=choice("FramesAspectRatio", "--ratio"),
        ),
    ] = None,
    resolution: VideoResolutionOption = None,
    audio: AudioOption = True,
    negative_prompt: NegativePromptOption = None,
    seed: SeedOption = None,
    output: OutputOption = CURRENT_DIRECTORY,
    preview: PreviewOption = None,
    api_url: ApiUrlOption = None,
    api_key: ApiKeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """A clip moving from a START frame to an END frame (local files, URLs or ids)."""
    with connected(api_url, api_key) as client:
        job = client.videos.frames(
            start,
            end,
            prompt,
            duration=duration,
            aspect_ratio=ratio,
            resolution=resolution,
            audio=audio,
            negative_prompt=negative_prompt,
            seed=seed,
        )
        finish(client, job, output, preview, as_json)


COMMANDS = (generate, edit, reframe, upscale, animate, transition)
