"""The yardstick of `job_read`: a bare Starlette app that answers a job document from memory,
served by uvicorn exactly as `sfumato serve` serves the gateway.

    python -m benchmarks.bare_app --port 8001 --document job.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def build_app(document: Any) -> Starlette:
    async def get_job(_request: Request) -> JSONResponse:
        return JSONResponse(document)

    return Starlette(routes=[Route("/v1/jobs/{id}", get_job)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--document", type=Path, required=True, help="JSON file to answer")
    arguments = parser.parse_args()
    # The same uvicorn settings as `sfumato serve` (loop and HTTP parser left on "auto").
    uvicorn.run(
        build_app(json.loads(arguments.document.read_text())),
        host="127.0.0.1",
        port=arguments.port,
        log_level="warning",
        timeout_graceful_shutdown=10,
        access_log=False,
    )


if __name__ == "__main__":
    main()
