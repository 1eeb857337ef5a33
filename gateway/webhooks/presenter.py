"""Webhook endpoints and deliveries as the API and the dashboard show them, and the body a
delivery sends: the job as `GET /v1/jobs/{id}` shows it, with the event's type and moment."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.clock import isoformat_ms
from core.services import Services
from core.tables import WebhookEndpoint
from core.webhooks.events import JobSnapshot
from core.webhooks.repository import PENDING
from core.webhooks.service import JobDelivery
from gateway.jobs.presenter import JobPresenter
from gateway.responses import render_json
from gateway.signing import UrlSigner
from gateway.webhooks import schemas


def _time(moment: datetime | None) -> str | None:
    return isoformat_ms(moment) if moment is not None else None


def endpoint_view(endpoint: WebhookEndpoint, secret: str | None = None) -> schemas.WebhookEndpoint:
    view = schemas.WebhookEndpoint(
        id=endpoint.id,
        url=endpoint.url,
        events=list(endpoint.events),
        createdAt=isoformat_ms(endpoint.created_at),
        disabledAt=_time(endpoint.disabled_at),
        disabledReason=endpoint.disabled_reason,
    )
    # The secret is in the answer that made it only: elsewhere the field is left out, not null.
    return view if secret is None else view.model_copy(update={"secret": secret})


def delivery_view(item: JobDelivery) -> schemas.WebhookDelivery:
    delivery = item.delivery
    return schemas.WebhookDelivery(
        id=delivery.id,
        event=delivery.event,
        url=delivery.url,
        endpointId=delivery.endpoint_id,
        status=delivery.status,
        createdAt=isoformat_ms(delivery.created_at),
        finishedAt=_time(delivery.finished_at),
        nextAttemptAt=_time(delivery.next_attempt_at) if delivery.status == PENDING else None,
        attempts=[
            schemas.WebhookAttempt(
                attemptedAt=isoformat_ms(attempt.attempted_at),
                statusCode=attempt.status_code,
                error=attempt.error,
                durationSeconds=round(attempt.seconds, 3),
            )
            for attempt in item.attempts
        ],
    )


class WebhookPayloads:
    """Renders a delivery's body: `{"type": "job.<event>", "timestamp", "data": job}`, where
    `data` is what `GET /v1/jobs/{id}` answers in its own `data`. Its file URLs name the files
    origin or the public URL when configured, else the address this gateway listens on
    (`own_url`: there is no request to take a `Host` header from)."""

    def __init__(self, services: Services, own_url: Callable[[], str]) -> None:
        self.services = services
        self.own_url = own_url

    def __call__(self, event: str, moment: datetime, job: JobSnapshot) -> bytes:
        settings = self.services.settings
        base_url = settings.files_origin or self.own_url()
        signer = UrlSigner(self.services.storage, base_url, settings.signed_url_seconds)
        return render_json(
            {
                "type": f"job.{event}",
                "timestamp": isoformat_ms(moment),
                "data": JobPresenter(signer).job(job),
            }
        )
