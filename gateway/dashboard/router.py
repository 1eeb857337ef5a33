"""The dashboard's routes under /dashboard and its static files, kept out of the OpenAPI
document (the API's contract is `/v1` alone)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Response
from fastapi.staticfiles import StaticFiles

from gateway.dashboard import admin, auth, create, jobs, keys, styles, uploads, usage
from gateway.dashboard.headers import DashboardHeadersMiddleware
from gateway.dashboard.web import PREFIX, STATIC_DIR, see_other


def _home() -> Response:
    return see_other(f"{PREFIX}/jobs")


def install_dashboard(app: FastAPI) -> None:
    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    router.add_api_route("", _home, methods=["GET"])
    router.add_api_route("/", _home, methods=["GET"])
    for module in (auth, keys, jobs, create, styles, uploads, usage, admin):
        router.include_router(module.router)
    app.include_router(router)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC_DIR), name="dashboard-static")
    app.add_middleware(DashboardHeadersMiddleware, prefix=PREFIX)
