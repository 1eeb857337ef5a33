"""Which site an extraction reads: the address it was asked for, normalised, so that extracting
the same site again finds the style the account already has of it (core/styles/service.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def site_address(url: str) -> str:
    """`url` as its site: scheme and host lowercased (a trailing dot on the host dropped), the
    scheme's default port dropped, the path without trailing slashes (`/` when empty), no user
    part, query or fragment. `https://Brand.example:443/shop/?utm=x#top` is
    `https://brand.example/shop`; http and https stay different sites. Percent-encoding and
    case in the path are kept (servers tell them apart)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    path = parts.path.rstrip("/") or "/"
    return f"{scheme}://{netloc}{path}"
