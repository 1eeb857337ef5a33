"""What a route may depend on, each taken from this process's runtime (`gateway/runtime.py`), so
a resource names the few things it uses rather than the whole gateway."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from core.db import Database
from core.errors import InvalidInput
from core.jobs.creation import JobCreation
from core.jobs.lifecycle import JobLifecycle
from core.services import Services
from core.styles.assets import LinkSlots
from core.styles.search import FolderCache
from core.styles.semantics import AssetSemantics
from gateway.jobs.reads import JobReads
from gateway.metrics import GatewayMetrics
from gateway.runtime import Gateway
from gateway.signing import UrlSigner


def runtime_of(request: Request) -> Gateway:
    runtime: Gateway = request.app.state.gateway
    return runtime


async def _database(request: Request) -> Database:
    return runtime_of(request).services.db


async def _services(request: Request) -> Services:
    return runtime_of(request).services


async def _lifecycle(request: Request) -> JobLifecycle:
    return runtime_of(request).lifecycle


async def _creation(request: Request) -> JobCreation:
    return runtime_of(request).creation


async def _metrics(request: Request) -> GatewayMetrics:
    return runtime_of(request).metrics


async def job_reads_of(request: Request) -> JobReads:
    return runtime_of(request).job_reads


async def _semantics(request: Request) -> AssetSemantics:
    return runtime_of(request).semantics


async def _folders(request: Request) -> FolderCache:
    return runtime_of(request).folders


async def _link_slots(request: Request) -> LinkSlots:
    return runtime_of(request).link_slots


async def single_query_values(request: Request) -> None:
    """Every query parameter of the API is a scalar: one given twice is refused (400 naming it)
    rather than the last one silently winning over a first that a proxy may have checked."""
    names = [name for name, _ in request.query_params.multi_items()]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidInput({name: "must be given at most once" for name in repeated})


# The base URLs requests were made to, by what Starlette makes one of (scheme, server, root
# path, Host header): making it was a tenth of a job read's CPU, and a gateway sees few.
# Emptied when full, as any client can name any Host.
_BASE_URLS: dict[tuple[Any, ...], str] = {}
BASE_URLS_KEPT = 64


def _request_base_url(request: Request) -> str:
    scope = request.scope
    host = None
    for name, value in scope["headers"]:
        if name == b"host":
            host = value
            break
    key = (
        scope.get("scheme"),
        # A tuple from uvicorn, a list from Starlette's TestClient.
        tuple(scope.get("server") or ()),
        scope.get("app_root_path", scope.get("root_path", "")),
        host,
    )
    base_url = _BASE_URLS.get(key)
    if base_url is None:
        if len(_BASE_URLS) >= BASE_URLS_KEPT:
            _BASE_URLS.clear()
        base_url = _BASE_URLS[key] = str(request.base_url)
    return base_url


def public_base_url(request: Request) -> str:
    """Where people reach the service (an invitation's link): the configured public URL, else
    the request's own."""
    return runtime_of(request).services.settings.public_url or _request_base_url(request)


def files_base_url(request: Request) -> str:
    """Where the URLs of stored files point: the configured files origin, else the configured
    public URL; only a deployment that sets neither takes the request's own `Host` header."""
    return runtime_of(request).services.settings.files_origin or _request_base_url(request)


def url_signer_for(request: Request) -> UrlSigner:
    """The one signer of file URLs (the API's answers and the dashboard's pages alike)."""
    services = runtime_of(request).services
    return UrlSigner(
        services.storage, files_base_url(request), services.settings.signed_url_seconds
    )


async def _url_signer(request: Request) -> UrlSigner:
    return url_signer_for(request)


DatabaseDep = Annotated[Database, Depends(_database)]
# For the core services that take them all (uploads, references, styles' folders).
ServicesDep = Annotated[Services, Depends(_services)]
LifecycleDep = Annotated[JobLifecycle, Depends(_lifecycle)]
CreationDep = Annotated[JobCreation, Depends(_creation)]
MetricsDep = Annotated[GatewayMetrics, Depends(_metrics)]
JobReadsDep = Annotated[JobReads, Depends(job_reads_of)]
SignerDep = Annotated[UrlSigner, Depends(_url_signer)]
SemanticsDep = Annotated[AssetSemantics, Depends(_semantics)]
FoldersDep = Annotated[FolderCache, Depends(_folders)]
LinkSlotsDep = Annotated[LinkSlots, Depends(_link_slots)]
