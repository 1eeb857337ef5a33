"""The models a deployment serves (extension, `GET /v1/models`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.schemas import ResponseModel


class SettingRange(ResponseModel):
    min: float
    max: float
    default: float | None = Field(description="What the model runs at medium quality")


class ServedModelView(ResponseModel):
    id: str = Field(description="What a create's `model` names")
    operation: Literal["generate", "edit", "reframe", "upscale", "animate", "transition"]
    kind: Literal["builtin", "diffusion"]
    default: bool = Field(description="The operation's model when a create names none")
    licence: str
    steps: SettingRange | None = Field(description="The steps a create may ask; null: none")
    guidance: SettingRange | None = Field(description="The guidance a create may ask; null: none")
    negativePrompt: bool = Field(description="Whether it uses a negative prompt")
    loras: list[str] = Field(description="The LoRA adapters installed for it")
    mask: bool = Field(description="Whether an edit on it takes a mask")


class ModelList(ResponseModel):
    data: list[ServedModelView]
