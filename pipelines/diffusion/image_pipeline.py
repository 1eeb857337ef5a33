"""The base of the diffusion image pipelines: batched calls, progress and cancel, the OOM fallback.

A job becomes one or more *slots* (one image each: a prompt, a seed, maybe an input image and a
mask); the slots of compatible jobs run as one diffusers call with lists (prompt[i],
generator[i], image[i]), which is what `num_images_per_prompt` does for one prompt, generalised
so a batch can mix jobs and be split anywhere when the GPU runs out of memory.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from PIL import Image

from models.cache import ModelCache, shared_cache
from models.registry import AdapterSpec, ModelSpec, find_registry
from models.settings import ModelSettings
from models.tuning import eagerly
from pipelines.base import (
    Adapter,
    Cancelled,
    ImageOutput,
    JobControl,
    OutOfDeviceMemory,
    PreviewControl,
    wants_preview,
)
from pipelines.diffusion.device import generator_for, is_out_of_memory
from pipelines.diffusion.latent_factors import LatentFactors
from pipelines.diffusion.previews import factors_for, latent_preview

log = logging.getLogger(__name__)

InputT = TypeVar("InputT")

# Arguments the operations pass where the class takes them; other families' classes lack some
# (FLUX has no image_guidance_scale, FLUX Fill no strength) and are called without them.
OPTIONAL_ARGUMENTS = {
    "strength",
    "image_guidance_scale",
    "guidance_scale",
    "noise_level",
    "negative_prompt",
}


@dataclass
class Slot:
    """One image of a pipeline call, and which member (job) of the batch it belongs to."""

    member: int
    prompt: str
    seed: int
    negative_prompt: str | None = None
    image: Image.Image | None = None
    mask: Image.Image | None = None
    # The image an IP-Adapter conditions this slot on (only when the weights have one).
    reference: Image.Image | None = None


@dataclass
class Call:
    """One batched pipeline call: the cache task, arguments shared by all slots, the slots."""

    task: str | None
    arguments: dict[str, Any]
    slots: list[Slot] = field(default_factory=list)
    # The LoRA adapters every slot of the call applies (batches share them).
    adapters: tuple[Adapter, ...] = ()


class BatchProgress:
    """Progress of one pipeline call spread to its members; a cancelled member is dropped.

    `report` calls each live member's `progress`; one that raises `Cancelled` is marked dropped
    (its images are thrown away, the others go on). Only when every member is gone does the
    call itself stop, by raising `Cancelled` out of the diffusers callback.
    """

    def __init__(self, controls: Sequence[JobControl]) -> None:
        self.controls = list(controls)
        self.dropped: set[int] = set()
        self._span = (0.0, 1.0)

    def within(self, start: float, stop: float) -> None:
        """Map the next call's own progress [0, 1] to [start, stop] of the members' progress."""
        self._span = (start, stop)

    def report(self, fraction: float, message: str | None = None) -> None:
        start, stop = self._span
        overall = start + (stop - start) * fraction
        for index, control in enumerate(self.controls):
            if index in self.dropped:
                continue
            try:
                control.progress(overall, message)
            except Cancelled:
                log.info("member %d of a batch was cancelled; dropping it", index)
                self.dropped.add(index)
        if len(self.dropped) == len(self.controls):
            raise Cancelled()

    def wanting_previews(self) -> list[int]:
        """The live members whose controls would show a preview now."""
        return [
            index
            for index, control in enumerate(self.controls)
            if index not in self.dropped and wants_preview(control)
        ]

    def preview(self, member: int, image: Image.Image) -> None:
        control = self.controls[member]
        if isinstance(control, PreviewControl):
            control.preview(image)


def seed_of_image(seed: int, index: int) -> int:
    """The seed of image `index` of a job's variations (docs/api.md): the next seeds, wrapping
    within 0..2**32-1, so image i of seed s is image 0 of seed s + i."""
    return (seed + index) % 2**32


def negative_prompt_notes(negative_prompt: str | None, guidance: float) -> list[str]:
    """What a pipeline says of a negative prompt it was given but that cannot act."""
    if negative_prompt and guidance <= 1:
        return [f"the negative prompt has no effect at guidance {guidance:g} (it needs > 1)"]
    return []


class DiffusionPipeline(Generic[InputT]):
    """Base of the diffusion pipelines: reads the operation's registry entry, loads it at
    construction (a missing model fails the worker's start, not the first job), and runs
    batched calls with progress, cancel and the OOM fallback."""

    operation: str

    def __init__(
        self,
        spec: ModelSpec | None = None,
        cache: ModelCache | None = None,
        models: ModelSettings | None = None,
        adapters: tuple[AdapterSpec, ...] = (),
    ) -> None:
        models = models or ModelSettings()
        if spec is None:
            registry = find_registry(models)
            spec = registry.spec(self.operation)
            adapters = tuple(registry.adapters_for(spec.id))
        self.spec = spec
        # The LoRA adapters installed for this model, loaded into its weights on first use.
        self.adapters = {adapter.name: adapter for adapter in adapters}
        self.cache = cache or shared_cache(models)
        self.cache.ensure(self.spec, self.tasks())
        # Called with the number of images of every pipeline call (metrics, benchmarks, tests).
        self.call_listeners: list[Callable[[int], None]] = []

    def tasks(self) -> tuple[str | None, ...]:
        """The cache tasks (models/cache.py) this operation asks for; loaded at start-up."""
        return (None,)

    # --- batching (workers/batching.py) --------------------------------------------------

    def batch_key(self, inputs: InputT) -> Hashable | None:
        """Jobs with equal keys may share one call; None: this job runs alone."""
        return None

    def batch_weight(self, inputs: InputT) -> int:
        """How many images this job adds to a call."""
        return 1

    def batch_capacity(self) -> int:
        return self.spec.batch_limit

    def run(self, inputs: InputT, control: JobControl) -> ImageOutput:
        result = self.run_batch([inputs], [control])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def run_batch(
        self, inputs: Sequence[InputT], controls: Sequence[JobControl]
    ) -> list[ImageOutput | BaseException]:
        """One output (or the exception that ended it) per member, in order."""
        progress = BatchProgress(controls)
        progress.report(0.0, "starting")
        outputs = self.execute(list(inputs), progress)
        return [
            Cancelled() if index in progress.dropped else output
            for index, output in enumerate(outputs)
        ]

    def execute(self, inputs: list[InputT], progress: BatchProgress) -> list[ImageOutput]:
        raise NotImplementedError

    # --- calls ---------------------------------------------------------------------------

    def run_call(self, call: Call, progress: BatchProgress) -> list[Image.Image]:
        """The slots' images, in order (see `_run_slots` for running out of memory)."""
        return self._run_slots(call, call.slots, progress)

    def _run_slots(
        self, call: Call, slots: list[Slot], progress: BatchProgress
    ) -> list[Image.Image]:
        """On a CUDA out-of-memory error the models no call is using are released, the device's
        cache emptied, and the slots retried as two halves, each of which may split again; one
        image that still does not fit fails the call (`OutOfDeviceMemory`: the job fails with
        a refund, the worker goes on to its next job)."""
        try:
            return self._attempt(call, slots, progress)
        except Exception as error:
            if not is_out_of_memory(error):
                raise
            log.warning("out of GPU memory with %d images; retrying in halves", len(slots))
        # Out of the except block: the error's traceback (holding the failed call's tensors)
        # is gone before the memory is handed back.
        self.cache.release_unused(self.spec)
        if len(slots) == 1:
            raise OutOfDeviceMemory("one image does not fit in the GPU's memory")
        middle = len(slots) // 2
        return self._run_slots(call, slots[:middle], progress) + self._run_slots(
            call, slots[middle:], progress
        )

    def _attempt(self, call: Call, slots: list[Slot], progress: BatchProgress) -> list[Image.Image]:
        with self.cache.pipeline_for(self.spec, call.task) as pipe:
            self._apply_adapters(pipe, call.adapters)
            arguments = dict(call.arguments)
            arguments["prompt"] = [slot.prompt for slot in slots]
            if any(slot.negative_prompt for slot in slots):
                # "" is what diffusers uses for a slot without one (the unconditional prompt).
                arguments["negative_prompt"] = [slot.negative_prompt or "" for slot in slots]
            arguments["generator"] = [generator_for(slot.seed, self.cache.device) for slot in slots]
            if any(slot.image is not None for slot in slots):
                arguments["image"] = [slot.image for slot in slots]
            if any(slot.mask is not None for slot in slots):
                arguments["mask_image"] = [slot.mask for slot in slots]
            if has_ip_adapter(pipe):
                arguments["ip_adapter_image_embeds"] = self._ip_adapter_embeds(
                    pipe, slots, float(arguments.get("guidance_scale", 1.0)) > 1
                )
            steps = int(arguments.get("num_inference_steps", 1))
            factors = factors_for(self.spec.family, self.spec.pipeline)
            aspect = _aspect(arguments, slots)

            def on_step_end(
                pipeline: Any, step: int, _timestep: Any, tensors: dict[str, Any]
            ) -> dict[str, Any]:
                total = int(getattr(pipeline, "num_timesteps", 0) or steps)
                progress.report((step + 1) / max(total, 1), "denoising")
                latents = tensors.get("latents")
                if factors is not None and latents is not None:
                    self._show_previews(progress, slots, latents, factors, aspect)
                return tensors

            def on_step(step: int, _timestep: Any, _latents: Any) -> None:
                progress.report((step + 1) / max(steps, 1), "denoising")

            accepted = inspect.signature(pipe.__call__).parameters
            for name in OPTIONAL_ARGUMENTS & set(arguments) - set(accepted):
                del arguments[name]  # e.g. FLUX Fill has no strength: the class decides
            if "callback_on_step_end" in accepted:
                arguments["callback_on_step_end"] = on_step_end
            else:  # older pipelines (the x4 upscaler) have only the per-step callback
                arguments |= {"callback": on_step, "callback_steps": 1}
            for listener in self.call_listeners:
                listener(len(slots))
            # LoRA layers in the weights: the graphs compiled without them do not apply.
            with eagerly(pipe, bool(_loaded_adapters(pipe))):
                return list(self.invoke(pipe, arguments).images)

    @staticmethod
    def _show_previews(
        progress: BatchProgress,
        slots: list[Slot],
        latents: Any,
        factors: LatentFactors,
        aspect: float,
    ) -> None:
        """Each member that wants one is shown the latents of its first image."""
        for member in progress.wanting_previews():
            position = next((i for i, slot in enumerate(slots) if slot.member == member), None)
            if position is None or position >= len(latents):
                continue
            image = latent_preview(latents[position], factors, aspect)
            if image is not None:
                progress.preview(member, image)

    def _apply_adapters(self, pipe: Any, adapters: tuple[Adapter, ...]) -> None:
        """Make `adapters` (at their scales) the active LoRA of these weights, and none other:
        each is loaded into the weights once (the twins made with `from_pipe` share them) and
        kept while the weights stay in the cache; a call without adapters turns them off."""
        loaded = _loaded_adapters(pipe)
        if not adapters:
            if loaded:
                pipe.disable_lora()
            return
        for adapter in adapters:
            if adapter.name not in loaded:
                spec = self.adapters[adapter.name]
                log.info("loading the LoRA adapter %s into %s", adapter.name, self.spec.id)
                pipe.load_lora_weights(
                    str(spec.folder), weight_name=spec.weight_name, adapter_name=adapter.name
                )
        pipe.enable_lora()
        pipe.set_adapters(
            [adapter.name for adapter in adapters],
            adapter_weights=[adapter.scale for adapter in adapters],
        )

    def _ip_adapter_embeds(self, pipe: Any, slots: list[Slot], guidance: bool) -> list[Any]:
        """Image embeddings for weights with an IP-Adapter: of the call's reference (diffusers
        repeats one image's embeddings over the batch, so a call has one reference: jobs with
        one run alone), or of a grey image at scale 0 for a call without one (the shared UNet
        wants image embeddings in every call once an adapter is loaded)."""
        import torch

        references = {id(slot.reference): slot.reference for slot in slots}
        if len(references) > 1:
            raise ValueError("an IP-Adapter call takes one reference image for all its slots")
        reference = next(iter(references.values()))
        adapter = self.spec.option("ip_adapter") or {}
        pipe.set_ip_adapter_scale(float(adapter.get("scale", 0.6)) if reference else 0.0)
        image = reference or Image.new("RGB", (224, 224), (128, 128, 128))
        with torch.no_grad():
            return list(
                pipe.prepare_ip_adapter_image_embeds(
                    [image], None, pipe._execution_device, 1, guidance
                )
            )

    def invoke(self, pipe: Any, arguments: dict[str, Any]) -> Any:
        """The diffusers call itself (tests override it to simulate running out of memory)."""
        return pipe(**arguments)


def _aspect(arguments: dict[str, Any], slots: list[Slot]) -> float:
    """The width / height of the call's images (a preview of token latents needs it)."""
    if "width" in arguments and "height" in arguments:
        return float(arguments["width"]) / float(arguments["height"])
    image = slots[0].image
    return image.width / image.height if image is not None else 1.0


def _loaded_adapters(pipe: Any) -> set[str]:
    """The LoRA adapters loaded into these weights (none for a class without LoRA support)."""
    if not hasattr(pipe, "get_list_adapters"):
        return set()
    return {name for names in pipe.get_list_adapters().values() for name in names}


def has_ip_adapter(pipe: Any) -> bool:
    """Whether an IP-Adapter is loaded into these weights' UNet."""
    unet = getattr(pipe, "unet", None)
    return getattr(getattr(unet, "config", None), "encoder_hid_dim_type", None) == "ip_image_proj"
