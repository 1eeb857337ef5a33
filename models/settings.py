"""What configures the models of a process: where they are, which device, how much memory.

Read once by whoever composes the process (`ModelSettings()` reads the environment; the gateway
and the worker pass their data directory) and handed to the registry, the cache and `pull`
explicitly: nothing else in `models/` reads the environment.

    SFUMATO_MODELS_DIR       where `sfumato models pull` puts models (default: DATA_DIR/models)
    SFUMATO_MODELS_FILE      the registry file (default: MODELS_DIR/models.toml); an override
    SFUMATO_MODEL_DEVICE     cpu, cuda, cuda:1, ... (default auto: CUDA when there is one)
    SFUMATO_MODEL_MEMORY_GB  the cache's budget (default 90 % of the GPU, unbounded on the CPU)
    HF_TOKEN, HF_ENDPOINT    Hugging Face's own variables, for `pull` (gated models, a mirror)
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REGISTRY_NAME = "models.toml"


class ModelSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SFUMATO_", extra="ignore")

    data_dir: Path = Path("./data")
    models_dir: Path | None = None
    models_file: Path | None = None
    model_device: str = "auto"
    model_memory_gb: float = Field(default=0.0, ge=0)
    hf_token: str | None = Field(
        default=None, validation_alias=AliasChoices("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
    )
    hf_endpoint: str | None = Field(default=None, validation_alias=AliasChoices("HF_ENDPOINT"))

    @property
    def directory(self) -> Path:
        """Where pulled models and the registry live."""
        return (self.models_dir or self.data_dir / "models").resolve()

    @property
    def registry_file(self) -> Path:
        return (self.models_file or self.directory / REGISTRY_NAME).resolve()

    @property
    def registry_file_is_explicit(self) -> bool:
        """SFUMATO_MODELS_FILE named it: its absence is an error, not "no models"."""
        return self.models_file is not None
