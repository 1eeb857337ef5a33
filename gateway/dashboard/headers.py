"""The headers every dashboard answer carries (pages, redirects, its static files): a strict
Content-Security-Policy (scripts and stylesheets only from the dashboard's own files, no inline
script or style, nothing may frame it), the same refusal of framing for older browsers,
`nosniff`, a referrer kept to the dashboard's own origin, and HSTS when the browser came over
https (as a trusted proxy says: gateway/app.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.dependencies import files_base_url, runtime_of

HSTS = "max-age=31536000"
# Policies kept (one per files base URL; without SFUMATO_PUBLIC_URL that follows the Host
# header, which any client names: emptied when full).
POLICIES_KEPT = 64
FIXED_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def content_security_policy(files_origin: str) -> str:
    """Images, videos and uploads also reach the origin of stored files (SFUMATO_FILES_URL, or
    the S3 bucket's): nothing else is loaded from anywhere but the dashboard itself."""
    media = f"'self' {files_origin}"
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src {media}",
            f"media-src {media}",
            f"connect-src {media}",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class DashboardHeadersMiddleware:
    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix
        # Files base URL -> the policy naming its stored files' origin (a presigned URL's, which
        # is made locally, without a request).
        self._policies: dict[str, str] = {}

    def _policy(self, request: Request) -> str:
        base_url = files_base_url(request)
        policy = self._policies.get(base_url)
        if policy is None:
            storage = runtime_of(request).services.storage
            sample = storage.url_for("dashboard/csp", base_url=base_url, expires_in=60)
            if len(self._policies) >= POLICIES_KEPT:
                self._policies.clear()
            policy = self._policies[base_url] = content_security_policy(_origin(sample))
        return policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (
            path == self.prefix or path.startswith(self.prefix + "/")
        ):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        headers = {**FIXED_HEADERS, "Content-Security-Policy": self._policy(request)}
        if request.url.scheme == "https":
            headers["Strict-Transport-Security"] = HSTS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = MutableHeaders(scope=message)
                for name, value in headers.items():
                    response_headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
