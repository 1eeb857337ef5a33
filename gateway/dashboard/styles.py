"""Styles: extract from a website, the saved styles, one style's palette (swatches and CSS
gradients), typography specimens, tone, aesthetic and logo, its linked folder and a semantic
search over it; through `core/styles/service.py` as the API's styles routes."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from core.prices import extract_style_price
from core.styles import assets as style_assets
from core.styles import search as style_search
from core.styles import service as styles_service
from core.styles.payload import GradientColour, SolidColour, colours_of, typography_of
from core.tables import Style
from gateway.dashboard.create import FormRefused, create_job, image_choices
from gateway.dashboard.jobs import gallery_for
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PostedDep,
    see_other,
    spend,
)
from gateway.dependencies import url_signer_for

router = APIRouter(route_class=DashboardRoute)
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


def _swatch(colour: SolidColour | GradientColour) -> Swatch:
    """Validated colours only reach CSS (core/styles/payload.py checks every hex)."""
    if isinstance(colour, SolidColour):
        return Swatch(colour.name, colour.role, "solid", colour.hex, colour.hex.upper())
    parts = ", ".join(
        f"{stop.hex} {stop.position_pct:g}%" if stop.position_pct is not None else stop.hex
        for stop in colour.stops
    )
    if colour.gradient_subtype == "radial":
        css = f"radial-gradient(circle, {parts})"
    else:
        turn = f"{colour.angle_deg:g}deg, " if colour.angle_deg is not None else ""
        css = f"linear-gradient({turn}{parts})"
    label = " → ".join(stop.hex for stop in colour.stops)
    return Swatch(colour.name, colour.role, "gradient", css, label)


def _swatches(style: Style) -> list[Swatch]:
    return [_swatch(colour) for colour in colours_of(style.colours)]


# CSS's generic families: keywords, which a quoted name would turn into a font nobody has.
GENERIC_FAMILIES = {
    "serif",
    "sans-serif",
    "monospace",
    "cursive",
    "fantasy",
    "system-ui",
    "ui-serif",
    "ui-sans-serif",
    "ui-monospace",
    "ui-rounded",
    "math",
    "emoji",
}


def css_font_family(family: str) -> str:
    """A `font-family` value for a specimen in the brand's font where this browser has it: a
    generic family as its keyword, else the name quoted (quotes, backslashes and CSS's
    punctuation removed) before the dashboard's own fallback."""
    if family.strip().lower() in GENERIC_FAMILIES:
        return family.strip().lower()
    name = re.sub(r"[\"'\\;<>{}]", "", family).strip()
    return f'"{name}", system-ui, sans-serif'


def _specimens(style: Style) -> list[dict[str, Any]]:
    return [
        {
            "family": item.font_family,
            "css_family": css_font_family(item.font_family),
            "weight": item.weight or "regular",
            "css_weight": WEIGHTS.get(str(item.weight), 400),
            "transform": item.text_transform or "none",
            "role": item.role,
        }
        for item in typography_of(style.typography)
    ]


def _styles_page(page: Page, status: int = 200, **context: Any) -> Response:
    cursor = page.request.query_params.get("cursor")
    styles, next_cursor = styles_service.list_page(
        page.services.db, page.user.account_id, cursor, PAGE_SIZE
    )
    signer = url_signer_for(page.request)
    summaries = [
        {
            "id": style.id,
            "name": style.name,
            "url": style.url,
            "logo_url": signer.url(style.logo_key) if style.logo_key else None,
            "swatches": _swatches(style)[:8],
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
        extract_price=extract_style_price(page.services.config.prices),
        **context,
    )


@router.get("/styles")
def styles_page(page: PageDep, done: Annotated[str, Query(max_length=16)] = "") -> Response:
    return _styles_page(page, notice="The style was deleted." if done == "deleted" else None)


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
            as_new=page.field("as_new") == "on",
        )
    return see_other(f"{PREFIX}/jobs/{job_id}")


def _style_page(
    page: Page, style_id: str, status: int = 200, query: str = "", **context: Any
) -> Response:
    style = styles_service.get_owned(page.services.db, page.user.account_id, style_id)
    if style is None:
        raise styles_service.StyleNotFound()
    signer = url_signer_for(page.request)
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
        swatches=_swatches(style),
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


@router.post("/styles/{style_id}/delete")
def delete_style(page: PostedDep, style_id: str) -> Response:
    """The API's DELETE /v1/styles/{id}, after the box that confirms it was ticked."""
    if page.field("confirm") != "yes":
        return _style_page(page, style_id, 400, message="Tick the box to confirm the deletion.")
    styles_service.delete(page.services, page.user.account_id, style_id)
    return see_other(f"{PREFIX}/styles?done=deleted")


@router.post("/styles/{style_id}/assets")
def link_assets(page: PostedDep, style_id: str) -> Response:
    images = page.fields("images")
    if not images:
        return _style_page(page, style_id, 400, message="Choose at least one image to link.")
    spend(page, "POST", f"/v1/styles/{style_id}/assets")
    style_assets.link_assets(
        page.services,
        page.runtime.semantics,
        page.runtime.link_slots,
        page.user.account_id,
        style_id,
        images,
    )
    return see_other(f"{PREFIX}/styles/{style_id}#folder")
