"""sfumato_client: the typed Python client of the Sfumato image and video generation API.

from sfumato_client import Client

with Client() as client:  # SFUMATO_API_URL, SFUMATO_API_KEY
    job = client.images.generate(prompt="a lighthouse at dusk").wait()
    job.download("out/")
"""

# The code that does I/O is written once, in `_async`; `_sync` is generated from it by
# clients/python/generate_sync.py (`make client-sync`).
from sfumato_client._async.client import AsyncClient
from sfumato_client._async.jobs import AsyncJob
from sfumato_client._sync.client import Client
from sfumato_client._sync.jobs import Job
from sfumato_client.errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    ConcurrencyLimitError,
    IdempotencyKeyReusedError,
    InsufficientCreditsError,
    InternalServerError,
    JobFailedError,
    JobTimeoutError,
    NotFoundError,
    RateLimitError,
    SubscriptionRequiredError,
    UsageLimitError,
    ValidationError,
)
from sfumato_client.models import (
    Account,
    JobData,
    JobError,
    JobResult,
    ResultImage,
    ResultStyle,
    ResultVideo,
    SearchHit,
    ServedModel,
    SettingRange,
    Style,
    StyleAsset,
    StyleSummary,
    Upload,
    Webhook,
    WebhookDelivery,
    WebhookEndpoint,
)

__all__ = [
    "APIConnectionError",
    "APIError",
    "Account",
    "AsyncClient",
    "AsyncJob",
    "AuthenticationError",
    "Client",
    "ConcurrencyLimitError",
    "IdempotencyKeyReusedError",
    "InsufficientCreditsError",
    "InternalServerError",
    "Job",
    "JobData",
    "JobError",
    "JobFailedError",
    "JobResult",
    "JobTimeoutError",
    "NotFoundError",
    "RateLimitError",
    "ResultImage",
    "ResultStyle",
    "ResultVideo",
    "SearchHit",
    "ServedModel",
    "SettingRange",
    "Style",
    "StyleAsset",
    "StyleSummary",
    "SubscriptionRequiredError",
    "Upload",
    "UsageLimitError",
    "ValidationError",
    "Webhook",
    "WebhookDelivery",
    "WebhookEndpoint",
]
