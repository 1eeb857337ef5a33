"""Webhooks' request and response shapes (extension; docs/api.md "Webhooks")."""

from __future__ import annotations

from pydantic import Field

from core.jobs.requests import RequestModel, WebhookEvents, WebhookUrl
from gateway.schemas import ResponseModel


class CreateWebhookRequest(RequestModel):
    url: WebhookUrl
    events: WebhookEvents | None = None


class WebhookEndpoint(ResponseModel):
    id: str = Field(json_schema_extra={"format": "uuid"})
    url: str
    events: list[str]
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    disabledAt: str | None = Field(json_schema_extra={"format": "date-time"})
    disabledReason: str | None = Field(
        description="Why it was disabled (its deliveries failed for days); rotate its secret to "
        "enable it again"
    )
    secret: str | None = Field(
        default=None, description="`whsec_...`: only in the answer that made it; keep it"
    )


class WebhookEnvelope(ResponseModel):
    data: WebhookEndpoint


class WebhookList(ResponseModel):
    data: list[WebhookEndpoint]


class WebhookSecret(ResponseModel):
    secret: str = Field(description="`whsec_...`: shown this once")


class WebhookSecretEnvelope(ResponseModel):
    data: WebhookSecret


class WebhookAttempt(ResponseModel):
    attemptedAt: str = Field(json_schema_extra={"format": "date-time"})
    statusCode: int | None
    error: str | None
    durationSeconds: float


class WebhookDelivery(ResponseModel):
    id: str = Field(description="The `webhook-id` of every attempt")
    event: str
    url: str
    endpointId: str | None = Field(description="None: the webhook named on the create")
    status: str = Field(description="pending, delivered or failed")
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    finishedAt: str | None = Field(json_schema_extra={"format": "date-time"})
    nextAttemptAt: str | None = Field(json_schema_extra={"format": "date-time"})
    attempts: list[WebhookAttempt]


class WebhookDeliveryEnvelope(ResponseModel):
    data: WebhookDelivery


class WebhookDeliveryList(ResponseModel):
    data: list[WebhookDelivery]
