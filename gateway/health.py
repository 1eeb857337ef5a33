"""Probes at the root, outside `/v1` and without an API key (Kubernetes calls them).

`GET /healthz` (liveness): the process serves requests; it checks nothing else, so a database
outage never makes Kubernetes restart healthy gateways. `GET /readyz`: the database answers a
query and the broker a PING, within a deadline; otherwise 503 with the error envelope, each
check ("ok" or "unavailable", never the error's text) in `details`; and the sentence model of
style search is loaded (it loads in the background at start-up: `sentenceModel` is "unavailable"
until then). It is for monitoring: the gateways' Kubernetes readiness probe is `/healthz` too,
since a dependency outage hits every replica at once (docs/operations.md).
"""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request

from core.health import CHECK_TIMEOUT_SECONDS, Readiness, ReadinessChecks
from gateway.errors import ApiError, error_response
from gateway.responses import JsonResponse

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
async def healthz() -> JsonResponse:
    return JsonResponse({"status": "ok"})


@router.get("/readyz")
async def readyz(request: Request) -> JsonResponse:
    checks: ReadinessChecks = request.app.state.readiness
    readiness = Readiness(False, {"all": "timed out"})
    # A check stuck on a silent network ends here; its thread finishes on its own.
    with anyio.move_on_after(CHECK_TIMEOUT_SECONDS * 2):
        readiness = await anyio.to_thread.run_sync(
            checks.run, request.app.state.readiness_extra, abandon_on_cancel=True
        )
    if readiness.ready:
        return JsonResponse({"status": "ready", "checks": readiness.checks})
    return error_response(
        ApiError(503, "SERVICE_UNAVAILABLE", "Not ready", readiness.checks, {"Retry-After": "5"})
    )
