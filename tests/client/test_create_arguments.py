"""Each create method of both clients takes exactly the fields of the request body it sends:
an option added to a request model (held to the server's document by
test_models_match_openapi.py) is missing from no client method, and no method takes an argument
its request cannot carry."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from pydantic import BaseModel

from sfumato_client import AsyncClient, Client, models

CREATES: dict[tuple[str, str], type[BaseModel]] = {
    ("images", "generate"): models.GenerateRequest,
    ("images", "edit"): models.EditRequest,
    ("images", "resize"): models.ResizeRequest,
    ("images", "upscale"): models.UpscaleRequest,
    ("videos", "image_to_video"): models.ImageToVideoRequest,
    ("videos", "frames"): models.FramesRequest,
    ("styles", "extract"): models.ExtractRequest,
}


@pytest.mark.parametrize(("resource", "method"), sorted(CREATES))
def test_a_create_takes_the_fields_of_its_request(resource: str, method: str) -> None:
    sync = Client("http://127.0.0.1:1/v1", "k")
    asynchronous = AsyncClient("http://127.0.0.1:1/v1", "k")
    fields = set(CREATES[resource, method].model_fields)
    for client in (sync, asynchronous):
        bound = getattr(getattr(client, resource), method)
        assert set(inspect.signature(bound).parameters) == fields, type(client).__name__
    sync.close()
    asyncio.run(asynchronous.close())
