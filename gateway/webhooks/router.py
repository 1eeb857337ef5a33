"""Webhooks (extension): the account's endpoints and secrets, and a job's deliveries."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from core.webhooks import service as webhooks
from gateway.auth import CallerDep
from gateway.dependencies import DatabaseDep, ServicesDep
from gateway.paths import DeliveryId, JobId, WebhookId
from gateway.schemas import DELETE_ERROR_RESPONSES, ERROR_RESPONSES, ContractRoute
from gateway.webhooks.presenter import delivery_view, endpoint_view
from gateway.webhooks.schemas import (
    CreateWebhookRequest,
    WebhookDeliveryEnvelope,
    WebhookDeliveryList,
    WebhookEnvelope,
    WebhookList,
    WebhookSecretEnvelope,
)

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)


@router.post(
    "/webhooks",
    status_code=201,
    response_model=WebhookEnvelope,
    summary="Add a webhook endpoint (extension); its secret is in this answer only",
)
def create_webhook(body: CreateWebhookRequest, caller: CallerDep, services: ServicesDep) -> Any:
    made = webhooks.create_endpoint(
        services.db, services.settings, caller.account_id, body.url, body.events
    )
    return {"data": endpoint_view(made.endpoint, made.secret)}


@router.get("/webhooks", response_model=WebhookList, summary="List webhook endpoints (extension)")
def list_webhooks(caller: CallerDep, db: DatabaseDep) -> Any:
    return {"data": [endpoint_view(e) for e in webhooks.list_endpoints(db, caller.account_id)]}


@router.post(
    "/webhooks/secret",
    response_model=WebhookSecretEnvelope,
    summary="Make (or replace) the secret signing the webhooks named on creates (extension)",
)
def rotate_account_webhook_secret(caller: CallerDep, db: DatabaseDep) -> Any:
    return {"data": {"secret": webhooks.rotate_account_secret(db, caller.account_id)}}


@router.delete(
    "/webhooks/{id}",
    status_code=204,
    response_class=Response,
    responses=DELETE_ERROR_RESPONSES,
    summary="Delete a webhook endpoint (extension); its waiting deliveries fail",
)
def delete_webhook(endpoint_id: WebhookId, caller: CallerDep, db: DatabaseDep) -> Response:
    webhooks.delete_endpoint(db, caller.account_id, endpoint_id)
    return Response(status_code=204)


@router.post(
    "/webhooks/{id}/rotate-secret",
    response_model=WebhookEnvelope,
    summary="Replace an endpoint's secret, enabling it again if disabled (extension)",
)
def rotate_webhook_secret(endpoint_id: WebhookId, caller: CallerDep, db: DatabaseDep) -> Any:
    made = webhooks.rotate_endpoint_secret(db, caller.account_id, endpoint_id)
    return {"data": endpoint_view(made.endpoint, made.secret)}


@router.get(
    "/jobs/{id}/deliveries",
    response_model=WebhookDeliveryList,
    summary="A job's webhook deliveries and their attempts (extension)",
)
def list_job_deliveries(job_id: JobId, caller: CallerDep, db: DatabaseDep) -> Any:
    items = webhooks.deliveries_of_job(db, caller.account_id, job_id)
    return {"data": [delivery_view(item) for item in items]}


@router.post(
    "/jobs/{id}/deliveries/{deliveryId}/resend",
    response_model=WebhookDeliveryEnvelope,
    summary="Send a delivery again, now, with the same webhook-id (extension)",
)
def resend_job_delivery(
    job_id: JobId, delivery_id: DeliveryId, caller: CallerDep, db: DatabaseDep
) -> Any:
    webhooks.resend(db, caller.account_id, job_id, delivery_id)
    items = webhooks.deliveries_of_job(db, caller.account_id, job_id)
    return {"data": next(delivery_view(i) for i in items if i.delivery.id == delivery_id)}
