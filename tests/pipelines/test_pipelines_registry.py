"""The pipeline registry: one typed pipeline per operation, and a misconfigured one refused."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from models.settings import ModelSettings
from pipelines.base import (
    AnimatePipeline,
    Cancelled,
    EditPipeline,
    ExtractStyleInput,
    ExtractStylePipeline,
    GeneratePipeline,
    ReframePipeline,
    TransitionPipeline,
    UpscalePipeline,
)
from pipelines.registry import ModelNotServed, PipelineRegistry
from pipelines.styles import Extraction
from tests.support.control import RecordingControl

PROTOCOLS = {
    "generate": GeneratePipeline,
    "edit": EditPipeline,
    "reframe": ReframePipeline,
    "upscale": UpscalePipeline,
    "animate": AnimatePipeline,
    "transition": TransitionPipeline,
    "extract_style": ExtractStylePipeline,
}
PAGE = b"""<!doctype html><html><head><title>Acme Tea</title>
<style>body { background: #0a3d62; color: #f8c291 } a { color: #e55039 }</style></head>
<body><h1>Acme Tea</h1><p>Small-batch tea from the hills.</p><a href="/shop">Shop</a>
</body></html>"""


@dataclass(frozen=True)
class Document:
    url: str
    content_type: str | None
    body: bytes


def test_every_operation_has_a_builtin_pipeline_that_serves_it() -> None:
    registry = PipelineRegistry()
    assert registry.operations() == sorted(PROTOCOLS)
    for operation, protocol in PROTOCOLS.items():
        pipeline = registry.get(operation)
        assert isinstance(pipeline, protocol)
        assert pipeline.operation == operation
        assert registry.get(operation) is pipeline, "made once per process"


def test_a_pipeline_configured_for_another_operation_is_refused() -> None:
    registry = PipelineRegistry({"generate": "pipelines.builtin.edit:BuiltinEdit"})
    with pytest.raises(TypeError, match=r"BuiltinEdit cannot serve 'generate'.*'edit'"):
        registry.get("generate")


def test_a_job_names_its_model_and_one_this_worker_lacks_is_refused() -> None:
    """Without a model registry every operation's default is `builtin`; a model the worker does
    not have (its registry changed since the create) is refused by name, not run elsewhere."""
    registry = PipelineRegistry(models=ModelSettings(data_dir=Path("/nonexistent-sfumato")))
    assert registry.default_model("generate") == "builtin"
    assert registry.for_model("generate", "builtin") is registry.get("generate")
    assert registry.for_model("generate", None) is registry.get("generate")
    with pytest.raises(ModelNotServed, match="does not serve the model 'sdxl' for generate"):
        registry.for_model("generate", "sdxl")


def test_an_operation_nothing_serves_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="no pipeline serves the operation 'paint'"):
        PipelineRegistry().get("paint")


def test_extract_style_reads_the_site_through_the_fetcher_it_is_given() -> None:
    fetched: list[str] = []

    def fetcher(url: str) -> Document:
        fetched.append(url)
        if url.rstrip("/") != "https://acme.example":
            raise ConnectionRefusedError(url)
        return Document(url, "text/html; charset=utf-8", PAGE)

    pipeline = PipelineRegistry().get("extract_style")
    request = ExtractStyleInput("https://acme.example/", fetcher, check=lambda body: "image/png")
    extraction = pipeline.run(request, RecordingControl())
    assert isinstance(extraction, Extraction)
    assert extraction.style["name"] == "Acme Tea"
    assert "#0a3d62" in {colour["hex"].lower() for colour in extraction.style["colours"]}
    assert fetched[0] == "https://acme.example/"

    fetched.clear()
    with pytest.raises(Cancelled):
        pipeline.run(request, RecordingControl(cancelled=True))
    assert fetched == [], "a cancelled extraction fetches nothing"
