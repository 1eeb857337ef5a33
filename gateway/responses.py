"""The gateway's JSON answers (job reads, the error envelope, health, the dashboard's JSON),
rendered by orjson: the standard library's encoder was a tenth of a job read's CPU. Routes with
a response model are rendered by FastAPI through Pydantic instead."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse, Response


def render_json(content: Any) -> bytes:
    # Keys that are not strings become strings, as with the standard library.
    return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


class JsonResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return render_json(content)


class RenderedJsonResponse(Response):
    """A JSON answer whose body was rendered (by `render_json`) beforehand."""

    media_type = "application/json"
