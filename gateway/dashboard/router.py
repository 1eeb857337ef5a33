"""The dashboard's routes under /dashboard and its static files, and the root's page for a
browser, kept out of the OpenAPI document (the API's contract is `/v1` alone)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.dashboard import (
    admin,
    auth,
    create,
    jobs,
    keys,
    styles,
    uploads,
    usage,
    webhooks,
)
from gateway.dashboard.headers import DashboardHeadersMiddleware
from gateway.dashboard.web import PREFIX, STATIC_DIR, render, see_other

# Every method at the root, so that any but a browser's GET keeps the 404 it always had (a
# route for GET alone would answer the others 405).
ROOT_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _home() -> Response:
    return see_other(f"{PREFIX}/jobs")


def _root(request: Request) -> Response:
    """A browser (it asks for HTML) gets a page that leads to the dashboard and the API's
    documents; an API client gets the JSON 404 of any unknown path, as before."""
    if request.method in ("GET", "HEAD") and "text/html" in request.headers.get("accept", ""):
        return render(request, "root.html", user=None)
    raise StarletteHTTPException(404)


def install_dashboard(app: FastAPI) -> None:
    app.add_api_route("/", _root, methods=ROOT_METHODS, include_in_schema=False)
    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    router.add_api_route("", _home, methods=["GET"])
    router.add_api_route("/", _home, methods=["GET"])
    for module in (auth, keys, webhooks, jobs, create, styles, uploads, usage, admin):
        router.include_router(module.router)
    app.include_router(router)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC_DIR), name="dashboard-static")
    app.add_middleware(DashboardHeadersMiddleware, prefix=PREFIX)
