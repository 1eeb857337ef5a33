"""Styles: extract from a website, the saved styles, one style's palette (swatches and CSS
gradients), typography specimens, tone, aesthetic and logo, its linked folder and a semantic
search over it; through `core/styles/service.py` as the API's styles routes."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from core.styles import assets as style_assets
from core.styles import search as style_search
from core.styles import service as styles_service
from core.tables import Style
from gateway.dashboard.create import FormRefused, create_job, image_choices
from gateway.dashboard.jobs import gallery_for, signer_for
from gateway.dashboard.web import PREFIX, DashboardRoute, Page, PageDep, PostedDep, see_other

router = APIRouter(route_class=DashboardRoute)
HEX = re.compile(r"^#[0-9A-Fa-f]{6}$")
WEIGHTS = {"thin": 200, "regular": 400, "bold": 700}
PAGE_SIZE = 24


@dataclass(frozen=True)
class Swatch:
    name: str
    role: str
    kind: str
    # A CSS background value built only from validated hex colours and numbers.
    css: str
    label: str


def _swatch(colour: dict[str, Any]) -> Swatch | None:
    name = str(colour.get("name", ""))
    role = str(colour.get("role", ""))
    if colour.get("type") == "gradient":
        stops = [
            (str(stop.get("hex")), stop.get("positionPct"))
            for stop in colour.get("stops", [])
            if HEX.match(str(stop.get("hex")))
        ]
        if len(stops) < 2:
            return None
        parts = ", ".join(
            f"{hex_} {float(position):g}%" if isinstance(position, int | float) else hex_
            for hex_, position in stops
        )
        if colour.get("gradientSubtype") == "radial":
            css = f"radial-gradient(circle, {parts})"
        else:
            angle = colour.get("angleDeg")
            turn = f"{float(angle):g}deg, " if isinstance(angle, int | float) else ""
            css = f"linear-gradient({turn}{parts})"
        return Swatch(name, role, "gradient", css, " → ".join(hex_ for hex_, _ in stops))
    hex_value = str(colour.get("hex", ""))
    if not HEX.match(hex_value):
        return None
    return Swatch(name, role, "solid", hex_value, hex_value.upper())


def _specimens(style: Style) -> list[dict[str, Any]]:
    specimens = []
    for item in style.typography:
        family = str(item.get("fontFamily", ""))
        specimens.append(
            {
                "family": family,
                # A family name only, quoted for CSS; quotes and backslashes removed.
                "css_family": re.sub(r"[\"'\\;<>{}]", "", family),
                "weight": item.get("weight") or "regular",
                "css_weight": WEIGHTS.get(str(item.get("weight")), 400),
                "transform": item.get("textTransform") or "none",
                "role": item.get("role", ""),
            }
        )
    return specimens


def _styles_page(page: Page, status: int = 200, **context: Any) -> Response:
    cursor = page.request.query_params.get("cursor")
    styles, next_cursor = styles_service.list_page(
        page.services.db, page.user.account_id, cursor, PAGE_SIZE
    )
    signer = signer_for(page)
    summaries = [
        {
            "id": style.id,
            "name": style.name,
            "url": style.url,
            "logo_url": signer.url(style.logo_key) if style.logo_key else None,
            "swatches": [s for s in map(_swatch, style.colours) if s is not None][:8],
        }
        for style in styles
    ]
    return page.render(
        "styles.html",
        status,
        nav="styles",
        styles=summaries,
        next_cursor=next_cursor,
        form_token=secrets.token_urlsafe(24),
        **context,
    )


@router.get("/styles")
def styles_page(page: PageDep) -> Response:
    return _styles_page(page)


@router.post("/styles/extract")
def extract(page: PostedDep) -> Response:
    try:
        job_id = create_job(page, "extract")
    except FormRefused as refused:
        return _styles_page(
            page,
            refused.status,
            message=refused.message,
            details=refused.details,
            url=page.field("url"),
        )
    return see_other(f"{PREFIX}/jobs/{job_id}")


def _style_page(
    page: Page, style_id: str, status: int = 200, query: str = "", **context: Any
) -> Response:
    style = styles_service.get_owned(page.services.db, page.user.account_id, style_id)
    if style is None:
        raise styles_service.StyleNotFound()
    signer = signer_for(page)
    cursor = page.request.query_params.get("cursor")
    assets, next_cursor = style_assets.list_assets(
        page.services.db, page.user.account_id, style_id, cursor, PAGE_SIZE
    )
    hits = (
        style_search.search(
            page.services.db,
            page.runtime.semantics,
            page.runtime.folders,
            page.user.account_id,
            style_id,
            query,
            12,
        )
        if query
        else []
    )
    return page.render(
        "style.html",
        status,
        nav="styles",
        style=style,
        logo_url=signer.url(style.logo_key) if style.logo_key else None,
        swatches=[s for s in map(_swatch, style.colours) if s is not None],
        specimens=_specimens(style),
        assets=[(asset, signer.url(asset.storage_key)) for asset in assets],
        next_cursor=next_cursor,
        query=query,
        hits=[(hit, signer.url(hit.storage_key)) for hit in hits],
        choices=image_choices(page, gallery_for(page)),
        **context,
    )


@router.get("/styles/{style_id}")
def style_page(
    page: PageDep, style_id: str, q: Annotated[str, Query(max_length=500)] = ""
) -> Response:
    return _style_page(page, style_id, query=q.strip())


@router.post("/styles/{style_id}/assets")
def link_assets(page: PostedDep, style_id: str) -> Response:
    images = page.fields("images")
    if not images:
        return _style_page(page, style_id, 400, message="Choose at least one image to link.")
    style_assets.link_assets(
        page.services,
        page.runtime.semantics,
        page.runtime.link_slots,
        page.user.account_id,
        style_id,
        images,
    )
    return see_other(f"{PREFIX}/styles/{style_id}#folder")
