"""sfumato_client: the typed Python client of the Sfumato image and video generation API.

from sfumato_client import Client

with Client() as client:  # SFUMATO_API_URL, SFUMATO_API_KEY
    job = client.images.generate(prompt="a lighthouse at dusk").wait()
    job.download("out/")
"""

from sfumato_client._client import AsyncClient, Client
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
    Style,
    StyleAsset,
    StyleSummary,
    Upload,
)
from sfumato_client.resources.jobs import AsyncJob, Job

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
    "Style",
    "StyleAsset",
    "StyleSummary",
    "SubscriptionRequiredError",
    "Upload",
    "UsageLimitError",
    "ValidationError",
]
