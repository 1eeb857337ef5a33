"""The rules of webhooks: where they may point (the fetcher's SSRF rules, checked when they are
named), an account's endpoints and secrets (each secret shown once, when made), and a job's
deliveries with their attempts, and sending one again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.clock import utcnow
from core.db import Database
from core.errors import Conflict, InvalidInput, NotFound
from core.fetch import FetchPolicy, FetchRefused, vet
from core.jobs import repository as jobs_repository
from core.settings import Settings
from core.tables import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.webhooks import repository
from core.webhooks.events import DEFAULT_EVENTS
from core.webhooks.signing import new_secret

# A receiver's answer is read this far and no further (its status is what counts).
ANSWER_BYTES = 64 * 1024
MAX_ENDPOINTS = 20


def delivery_policy(settings: Settings) -> FetchPolicy:
    """The fetcher's rules for webhooks: the allow-list and timeout of every fetch, no redirect,
    the answer read up to `ANSWER_BYTES`."""
    return FetchPolicy.from_settings(settings, ANSWER_BYTES)


def check_url(settings: Settings, url: str, field: str) -> None:
    """Refuse (InvalidInput naming `field`) a URL the deliverer would not send to."""
    try:
        vet(url, delivery_policy(settings))
    except FetchRefused as error:
        raise InvalidInput({field: str(error)}, "The webhook URL is not allowed") from None


def job_webhook(
    db: Database, settings: Settings, account_id: str, url: str, events: Sequence[str] | None
) -> dict[str, object]:
    """What a create's `webhook` is stored as on its job, once checked: its URL allowed, and the
    account holding the secret its deliveries are signed with."""
    with db.read() as session:
        if repository.account_secret(session, account_id) is None:
            raise InvalidInput(
                {"webhook": "make the account's webhook secret first: POST /v1/webhooks/secret"},
                "The account has no webhook secret",
            )
    check_url(settings, url, "webhook.url")
    return {"url": url, "events": list(events or DEFAULT_EVENTS)}


def rotate_account_secret(db: Database, account_id: str) -> str:
    """A new secret for the webhooks named on creates (the old one stops at once)."""
    secret = new_secret()
    with db.write() as session:
        repository.set_account_secret(session, account_id, secret)
    return secret


def has_account_secret(db: Database, account_id: str) -> bool:
    with db.read() as session:
        return repository.account_secret(session, account_id) is not None


@dataclass(frozen=True)
class NewEndpoint:
    endpoint: WebhookEndpoint
    # Shown once, here.
    secret: str


class TooManyEndpoints(Conflict):
    def __init__(self) -> None:
        super().__init__(f"An account has at most {MAX_ENDPOINTS} webhook endpoints")


def create_endpoint(
    db: Database, settings: Settings, account_id: str, url: str, events: Sequence[str] | None
) -> NewEndpoint:
    check_url(settings, url, "url")
    secret = new_secret()
    with db.write() as session:
        if repository.count_endpoints(session, account_id) >= MAX_ENDPOINTS:
            raise TooManyEndpoints()
        endpoint = repository.add_endpoint(
            session,
            WebhookEndpoint(
                account_id=account_id,
                url=url,
                events=list(events or DEFAULT_EVENTS),
                secret=secret,
                created_at=utcnow(),
            ),
        )
    return NewEndpoint(endpoint, secret)


def list_endpoints(db: Database, account_id: str) -> Sequence[WebhookEndpoint]:
    with db.read() as session:
        return repository.endpoints_of(session, account_id)


def delete_endpoint(db: Database, account_id: str, endpoint_id: str) -> None:
    with db.write() as session:
        endpoint = repository.endpoint_owned(session, account_id, endpoint_id, for_update=True)
        if endpoint is None:
            raise NotFound("Webhook endpoint")
        repository.delete_endpoint(session, endpoint, utcnow())


def rotate_endpoint_secret(db: Database, account_id: str, endpoint_id: str) -> NewEndpoint:
    """A new secret for the endpoint (the old one stops at once); a disabled endpoint is
    enabled again, its failures forgotten (rotating is what its owner does after fixing it)."""
    secret = new_secret()
    with db.write() as session:
        endpoint = repository.endpoint_owned(session, account_id, endpoint_id, for_update=True)
        if endpoint is None:
            raise NotFound("Webhook endpoint")
        endpoint.secret = secret
        endpoint.disabled_at = None
        endpoint.disabled_reason = None
        endpoint.failing_since = None
    return NewEndpoint(endpoint, secret)


@dataclass(frozen=True)
class JobDelivery:
    delivery: WebhookDelivery
    attempts: Sequence[WebhookAttempt]


def deliveries_of_job(db: Database, account_id: str, job_id: str) -> list[JobDelivery]:
    """The job's deliveries, oldest first, each with its attempts. Raises NotFound."""
    with db.read() as session:
        job = jobs_repository.get(session, job_id)
        if job is None or job.account_id != account_id or job.deleted_at is not None:
            raise NotFound("Job")
        deliveries = repository.deliveries_of_job(session, job_id)
        attempts = repository.attempts_of(session, [d.id for d in deliveries])
    by_delivery: dict[str, list[WebhookAttempt]] = {d.id: [] for d in deliveries}
    for attempt in attempts:
        by_delivery[attempt.delivery_id].append(attempt)
    return [JobDelivery(d, by_delivery[d.id]) for d in deliveries]


class CannotResend(Conflict):
    pass


def resend(db: Database, account_id: str, job_id: str, delivery_id: str) -> WebhookDelivery:
    """Send a delivery of the job again, now, as the same message (the same `webhook-id`): one
    that was delivered or gave up goes back to the outbox with its retry window starting anew.
    Raises NotFound, or CannotResend when its endpoint is gone."""
    moment = utcnow()
    with db.write() as session:
        delivery = repository.get_delivery(session, delivery_id)
        if delivery is None or delivery.job_id != job_id or delivery.account_id != account_id:
            raise NotFound("Delivery")
        job = jobs_repository.get(session, job_id)
        if job is None or job.deleted_at is not None:
            raise NotFound("Delivery")
        if delivery.source == "endpoint" and delivery.endpoint_id is None:
            raise CannotResend("The delivery's endpoint was deleted")
        delivery.status = repository.PENDING
        delivery.next_attempt_at = moment
        delivery.created_at = moment
        delivery.finished_at = None
    return delivery
