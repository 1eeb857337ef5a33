"""The models this deployment serves, by operation (`GET /v1/models`), and the rules a create's
steering (issue 33: `model`, `steps`, `guidance`, `loras`) must keep for the model it picks.

Core knows no model registry: the composition root (`sfumato/served.py`) reads the same registry
file the workers load and describes it here, once per process. A queue's workers share that
file (SFUMATO_MODELS_DIR, or SFUMATO_MODELS_FILE; docs/models.md "A model per request"), so a
model listed here is one every worker of its queue has installed: a create is refused (400,
naming what is served) rather than handed to a worker that would have to fail it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.errors import InvalidInput

BUILTIN_MODEL = "builtin"


@dataclass(frozen=True)
class Bounds:
    """An inclusive range of a setting (steps, guidance)."""

    low: float
    high: float

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high

    def text(self) -> str:
        return f"{self.low:g}..{self.high:g}"

    def view(self) -> dict[str, float]:
        return {"min": self.low, "max": self.high}


@dataclass(frozen=True)
class ServedModel:
    id: str
    operation: str
    kind: Literal["builtin", "diffusion"]
    default: bool
    licence: str
    # None: the model takes no such setting (the builtin pipelines have no steps or guidance).
    steps: Bounds | None = None
    guidance: Bounds | None = None
    # What it runs at medium quality when the create names no steps or guidance.
    default_steps: int | None = None
    default_guidance: float | None = None
    takes_negative_prompt: bool = False
    # The LoRA adapters installed for this model (by name); empty: it takes none.
    adapters: tuple[str, ...] = ()
    takes_mask: bool = False

    def view(self) -> dict[str, Any]:
        """As `GET /v1/models` lists it."""
        return {
            "id": self.id,
            "operation": self.operation,
            "kind": self.kind,
            "default": self.default,
            "licence": self.licence,
            "steps": None
            if self.steps is None
            else {**self.steps.view(), "default": self.default_steps},
            "guidance": None
            if self.guidance is None
            else {**self.guidance.view(), "default": self.default_guidance},
            "negativePrompt": self.takes_negative_prompt,
            "loras": list(self.adapters),
            "mask": self.takes_mask,
        }


@dataclass(frozen=True)
class Steering:
    """What a create asks of its model (the request's fields, by their Python names)."""

    model: str | None = None
    steps: int | None = None
    guidance: float | None = None
    loras: Sequence[str] = ()
    mask: bool = False


@dataclass(frozen=True)
class ServedModels:
    models: tuple[ServedModel, ...] = field(default_factory=tuple)

    def for_operation(self, operation: str) -> list[ServedModel]:
        return [model for model in self.models if model.operation == operation]

    def default_for(self, operation: str) -> ServedModel:
        served = self.for_operation(operation)
        return next((model for model in served if model.default), served[0])

    def check(self, operation: str, steering: Steering) -> ServedModel:
        """The model a create runs on, its steering within that model's ranges; else an
        `InvalidInput` naming each field that is not, with what is allowed."""
        served = self.for_operation(operation)
        if not served:
            raise InvalidInput({"model": f"no model serves {operation}"})
        if steering.model is None:
            model = self.default_for(operation)
        else:
            found = [candidate for candidate in served if candidate.id == steering.model]
            if not found:
                listed = ", ".join(candidate.id for candidate in served)
                raise InvalidInput(
                    {"model": f"not served here; the models for {operation} are: {listed}"},
                    "The model asked for is not served here",
                )
            model = found[0]
        problems: dict[str, str] = {}
        for name, value, bounds in (
            ("steps", steering.steps, model.steps),
            ("guidance", steering.guidance, model.guidance),
        ):
            if value is None:
                continue
            if bounds is None:
                problems[name] = f"the model {model.id} takes no {name}"
            elif not bounds.holds(value):
                problems[name] = f"must be within {bounds.text()} for the model {model.id}"
        for index, name in enumerate(steering.loras):
            if name not in model.adapters:
                fitting = ", ".join(model.adapters) or "none"
                problems[f"loras[{index}].name"] = (
                    f"no adapter {name!r} fits the model {model.id} (installed for it: {fitting})"
                )
        if steering.mask and not model.takes_mask:
            problems["mask"] = f"the model {model.id} does not take a mask"
        if problems:
            raise InvalidInput(problems, f"The model {model.id} cannot run these settings")
        return model
