"""The interactive API documentation: `/docs` (Swagger UI) and `/redoc` (ReDoc), with their
scripts and styles served from the package (gateway/static/docs, vendored from npm's
`swagger-ui-dist` and `redoc` with their licences), so a self-hosted service's docs work with
no internet. Outside `/v1` and without a key, like the OpenAPI document they render."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).with_name("static") / "docs"
ASSETS = "/static/docs"
TITLE = "Sfumato API"


def install_docs(app: FastAPI, openapi_url: str) -> None:
    app.mount(ASSETS, StaticFiles(directory=STATIC), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=TITLE,
            swagger_js_url=f"{root}{ASSETS}/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/swagger-ui/favicon-32x32.png",
            # No "valid" badge: it would send the document to swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_redoc_html(
            openapi_url=root + openapi_url,
            title=TITLE,
            redoc_js_url=f"{root}{ASSETS}/redoc/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/swagger-ui/favicon-32x32.png",
            with_google_fonts=False,
        )
