"""The webhooks page: the account's endpoints (add, delete, rotate a secret, each secret shown
once; a disabled one with the reason) and the secret of the webhooks named on creates; and a
job's deliveries sent again. Through `core/webhooks/service.py`, as the API does."""

from __future__ import annotations

import contextlib
from typing import Annotated

from fastapi import APIRouter, Query, Response

from core.errors import DomainError
from core.webhooks import service as webhooks
from core.webhooks.events import DEFAULT_EVENTS, JobEvent
from gateway.dashboard.web import (
    PREFIX,
    DashboardRoute,
    Page,
    PageDep,
    PostedDep,
    see_other,
    spend,
)

router = APIRouter(route_class=DashboardRoute)
DONE = {"deleted": "The endpoint was deleted; its waiting deliveries failed."}


def _webhooks_page(page: Page, status: int = 200, **context: object) -> Response:
    account_id = page.user.account_id
    db = page.services.db
    return page.render(
        "webhooks.html",
        status,
        nav="webhooks",
        endpoints=webhooks.list_endpoints(db, account_id),
        has_account_secret=webhooks.has_account_secret(db, account_id),
        events=[event.value for event in JobEvent],
        default_events=DEFAULT_EVENTS,
        **context,
    )


@router.get("/webhooks")
def webhooks_page(page: PageDep, done: Annotated[str, Query(max_length=16)] = "") -> Response:
    return _webhooks_page(page, notice=DONE.get(done))


@router.post("/webhooks")
def create_endpoint(page: PostedDep) -> Response:
    url = page.field("url")
    events = [event for event in page.fields("events") if event in set(JobEvent)]
    spend(page, "POST", "/v1/webhooks")
    try:
        made = webhooks.create_endpoint(
            page.services.db, page.services.settings, page.user.account_id, url, events or None
        )
    except DomainError as error:
        reason = "; ".join(str(v) for v in (error.details or {}).values()) or error.message
        return _webhooks_page(page, 400, message=reason, form_url=url)
    return _webhooks_page(page, 201, created=made)


@router.post("/webhooks/secret")
def rotate_account_secret(page: PostedDep) -> Response:
    spend(page, "POST", "/v1/webhooks/secret")
    secret = webhooks.rotate_account_secret(page.services.db, page.user.account_id)
    return _webhooks_page(page, 200, account_secret=secret)


@router.post("/webhooks/{endpoint_id}/rotate")
def rotate_endpoint_secret(page: PostedDep, endpoint_id: str) -> Response:
    spend(page, "POST", f"/v1/webhooks/{endpoint_id}/rotate-secret")
    try:
        made = webhooks.rotate_endpoint_secret(page.services.db, page.user.account_id, endpoint_id)
    except DomainError as error:
        return _webhooks_page(page, error.status, message=error.message)
    return _webhooks_page(page, 200, created=made)


@router.post("/webhooks/{endpoint_id}/delete")
def delete_endpoint(page: PostedDep, endpoint_id: str) -> Response:
    spend(page, "DELETE", f"/v1/webhooks/{endpoint_id}")
    try:
        webhooks.delete_endpoint(page.services.db, page.user.account_id, endpoint_id)
    except DomainError as error:
        return _webhooks_page(page, error.status, message=error.message)
    return see_other(f"{PREFIX}/webhooks?done=deleted")


@router.post("/jobs/{job_id}/deliveries/{delivery_id}/resend")
def resend_delivery(page: PostedDep, job_id: str, delivery_id: str) -> Response:
    spend(page, "POST", f"/v1/jobs/{job_id}/deliveries/{delivery_id}/resend")
    # One gone meanwhile: the job's page shows what there is.
    with contextlib.suppress(DomainError):
        webhooks.resend(page.services.db, page.user.account_id, job_id, delivery_id)
    return see_other(f"{PREFIX}/jobs/{job_id}#deliveries")
