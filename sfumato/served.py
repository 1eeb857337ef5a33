"""The models this deployment serves, described for core (`core/served_models.py`) from the model
registry file the workers load: per operation, the registry's entry (the default) and the builtin
pipeline, which every worker has. Read at a process's start; reading it loads no weights (nor
torch), so a gateway replica can afford it."""

from __future__ import annotations

from core.served_models import BUILTIN_MODEL, Bounds, ServedModel, ServedModels
from models.presets import PRESETS
from models.registry import ModelRegistry, ModelSpec, find_registry, registered_operations
from models.settings import ModelSettings
from pipelines.diffusion.presets import quality_settings, steering_ranges

# The operations a create may run, in the order GET /v1/models lists them.
OPERATIONS = ("generate", "edit", "reframe", "upscale", "animate", "transition")
# The operations whose creates take steps, guidance and a negative prompt.
STEERED = ("generate", "edit")
PROJECT_LICENCE = "apache-2.0"


def served_models(settings: ModelSettings) -> ServedModels:
    """Raises RegistryError for a registry file that is named but missing or invalid."""
    registered = set(registered_operations(settings))
    registry = find_registry(settings) if registered else None
    models: list[ServedModel] = []
    for operation in OPERATIONS:
        if registry is not None and operation in registered:
            models.append(_diffusion(registry, registry.spec(operation)))
        models.append(
            ServedModel(
                id=BUILTIN_MODEL,
                operation=operation,
                kind="builtin",
                default=operation not in registered,
                licence=PROJECT_LICENCE,
                # The builtin editor applies its edits inside a mask.
                takes_mask=operation == "edit",
            )
        )
    return ServedModels(tuple(models))


def _diffusion(registry: ModelRegistry, spec: ModelSpec) -> ServedModel:
    steered = spec.operation in STEERED
    steps, guidance = steering_ranges(spec)
    default_steps, default_guidance = quality_settings(spec)
    licences = {preset.name: preset.licence for preset in PRESETS}
    return ServedModel(
        id=spec.id,
        operation=spec.operation,
        kind="diffusion",
        default=True,
        licence=spec.licence or licences.get(spec.preset or "", "see the model's page"),
        steps=Bounds(*steps) if steered else None,
        guidance=Bounds(*guidance) if steered else None,
        default_steps=default_steps if steered else None,
        default_guidance=default_guidance if steered else None,
        takes_negative_prompt=steered,
        adapters=tuple(a.name for a in registry.adapters_for(spec.id)) if steered else (),
        # The diffusion edit repaints inside a mask (inpainting, or an instruction edit kept
        # to the mask).
        takes_mask=spec.operation == "edit",
    )
