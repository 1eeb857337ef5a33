"""Runtime configuration, read from `SFUMATO_*` environment variables.

The mode of the service (embedded or distributed) is nothing but these settings: a database URL,
a broker URL and a storage URL. Defaults give the embedded mode under the data directory.
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.service_config import ServiceConfig, load_config

log = logging.getLogger(__name__)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SFUMATO_", extra="ignore")

    data_dir: Path = Path("./data")
    database_url: str | None = None
    broker_url: str = "memory://"
    storage_url: str | None = None
    # Namespaces Redis pub/sub channels and keys so several deployments can share one Redis.
    namespace: str = "sfumato"
    # Signs storage URLs; generated into the data dir on first start when not given.
    secret_key: str | None = None

    wait_seconds: float = Field(default=55.0, gt=0)
    # The processes' log lines: `text` (for people) or `json` (one object a line, for a log
    # collector; docs/operations.md).
    log_format: Literal["text", "json"] = "text"

    # The service's public base URL (https://api.example.com): absolute URLs in answers (file and
    # upload URLs) use it, never the request's Host header. Empty: the Host header (development).
    public_url: str = ""
    # A separate origin for stored files (https://files.example.com, routed to the gateways'
    # `/files`), with no cookies of its own: the recommended production setting, so a file can
    # never act on the API's or the dashboard's origin. Empty: files are served at public_url.
    files_url: str = ""

    # A claimed job whose worker stops renewing its lease for this long is handed out again.
    lease_seconds: float = Field(default=30.0, gt=0)
    # A running job's progress is written (and announced to event streams) at most this often,
    # and at least this often while it moves: a row write per job per interval, no more.
    progress_seconds: float = Field(default=0.8, gt=0)
    # A running job's live preview (`previewUrl`) is renewed at most this often; 0: no previews.
    preview_seconds: float = Field(default=1.0, ge=0)
    # `GET /v1/jobs/{id}/events` sends a comment this often while nothing else is sent.
    events_heartbeat_seconds: float = Field(default=15.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    sweep_interval_seconds: float = Field(default=5.0, gt=0)
    # A job committed this long ago but never published was orphaned by a crash or a broker
    # outage between commit and publish; younger ones are still being published by their request.
    dispatch_grace_seconds: float = Field(default=10.0, gt=0)
    # A pending job published this long ago and still unclaimed is published again (the broker
    # may have lost it); a duplicate delivery is harmless because claims are compare-and-set.
    republish_after_seconds: float = Field(default=300.0, gt=0)

    # Prices, plans and rate limits (TOML) replacing core/defaults.toml key by key.
    config_file: Path | None = None

    # Operation -> "module:Class" pipeline overrides, e.g. "generate=pkg.mod:Pipeline".
    pipelines: str = ""
    signed_url_seconds: int = Field(default=7 * 24 * 3600, ge=60)
    max_body_bytes: int = 64 * 1024
    # How an embedded deployment's SQLite commits: FULL syncs each commit to disk before it
    # returns (a power loss keeps every answered create and charge); NORMAL is faster and a
    # machine crash may undo the last commits (docs/operations.md "Power loss").
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL"
    # Request bodies in time (gateway/bodies.py): a JSON body or a form must arrive whole within
    # body_timeout_seconds; a file (an upload) must keep min_body_bytes_per_second on average once
    # that much time has passed. Slower bodies answer 408 and their connection closes.
    body_timeout_seconds: float = Field(default=15.0, gt=0)
    min_body_bytes_per_second: int = Field(default=16 * 1024, ge=1)
    # The gateway's HTTP server (sfumato/http_server.py): the largest request head (request line
    # and headers; a chunked body's trailer too), the time a client has to send it, and the
    # connections and requests served at once before it answers 503. Long-polls and event streams
    # count, so keep it above them.
    max_header_bytes: int = Field(default=64 * 1024, ge=4096)
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    max_concurrency: int = Field(default=1000, ge=1)

    # Uploads and fetched reference images (CONTRACT.md "Uploads"): bytes and decoded pixels.
    max_image_bytes: int = Field(default=25 * 1024 * 1024, ge=1)
    max_image_pixels: int = Field(default=50_000_000, ge=1)
    # Decoded pixels (MB) the image checks of one process may hold at once (core/images.py).
    decode_memory_mb: int = Field(default=512, ge=16)
    upload_url_seconds: int = Field(default=3600, ge=60)
    # Comma-separated hosts or CIDRs the fetcher may reach although they are not public
    # addresses, and over plain http (tests, intranets). Empty: public https only.
    fetch_allow: str = ""
    fetch_timeout_seconds: float = Field(default=10.0, gt=0)
    fetch_max_redirects: int = Field(default=5, ge=0)
    # Webhooks (core/webhooks/): a failed delivery is tried again after retry_base seconds,
    # doubling each time up to retry_max_delay (each delay jittered down by up to a half), for
    # retry_for seconds after its event, then marked failed. An endpoint whose deliveries have
    # all failed for disable_after seconds is disabled. The deliverer looks for due deliveries
    # every poll seconds, and one it claimed is another's again after claim seconds.
    webhook_retry_base_seconds: float = Field(default=5.0, gt=0)
    webhook_retry_max_delay_seconds: float = Field(default=3600.0, gt=0)
    webhook_retry_for_seconds: float = Field(default=24 * 3600.0, gt=0)
    webhook_disable_after_seconds: float = Field(default=3 * 24 * 3600.0, gt=0)
    webhook_poll_seconds: float = Field(default=1.0, gt=0)
    webhook_claim_seconds: float = Field(default=60.0, gt=0)
    # Comma-separated origins (`https://app.example.com`) whose pages may call the API from a
    # browser (CORS). Empty: none; `*`: any (keys travel in headers, never in cookies).
    cors_origins: str = ""
    # Style extraction renders pages in headless Chromium: its executable (empty: `chromium` on
    # PATH; "off": pages are read as text only), the time one extraction may take in it, and the
    # JavaScript memory one page may use.
    chromium: str = ""
    style_render_seconds: float = Field(default=20.0, gt=0)
    style_render_memory_mb: int = Field(default=512, ge=64)
    # Chromium's sandbox (pipelines/styles/browser.py): "auto" where the platform allows it (not
    # as root, with user namespaces), saying so when not; "required": no rendering without it;
    # "off": never.
    chromium_sandbox: Literal["auto", "required", "off"] = "auto"
    # The dashboard's cookies are `Secure` (and named `__Host-...`) when the browser came over
    # https ("auto"), or always, or never.
    cookie_secure: Literal["auto", "always", "never"] = "auto"
    # Comma-separated addresses or CIDRs of the proxies in front of the gateways (a load
    # balancer, an ingress). From them, and only from them, X-Forwarded-For and
    # X-Forwarded-Proto count: the client is the rightmost X-Forwarded-For hop that is not one of
    # them (the one the last trusted proxy saw), for every use of the address (sign-in limits,
    # logs). Empty: the connection's own peer is the client, whatever the headers say.
    trusted_proxies: str = ""
    # A dashboard session ends this long after its sign-in, however often it is used (its
    # rolling expiry, a week after the last use, never passes it).
    session_absolute_hours: float = Field(default=30 * 24, gt=0)

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        for item in filter(None, (part.strip() for part in value.split(","))):
            try:
                ipaddress.ip_network(item)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or CIDR") from None
        return value

    @property
    def trusted_proxy_list(self) -> list[str]:
        return [part.strip() for part in self.trusted_proxies.split(",") if part.strip()]

    @field_validator("public_url", "files_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        """An origin (and optional path prefix) that absolute URLs start with, or empty."""
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
            raise ValueError("must be an absolute http(s) URL without a query, or empty")
        return value.rstrip("/")

    @property
    def files_origin(self) -> str:
        """Where the URLs of stored files point when configured: the files origin, else the
        public URL; empty when neither is set (the caller then names its own address)."""
        return self.files_url or self.public_url

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'sfumato.db').resolve()}"

    @property
    def uses_redis(self) -> bool:
        return self.broker_url.startswith(("redis://", "rediss://"))

    @property
    def embedded_broker(self) -> bool:
        return self.broker_url.startswith("memory://")

    def service_config(self) -> ServiceConfig:
        return load_config(self.config_file)

    def pipeline_overrides(self) -> dict[str, str]:
        overrides: dict[str, str] = {}
        for item in filter(None, (part.strip() for part in self.pipelines.split(","))):
            operation, _, target = item.partition("=")
            overrides[operation.strip()] = target.strip()
        return overrides

    @property
    def cors_origin_list(self) -> list[str]:
        return [
            origin.strip().rstrip("/") for origin in self.cors_origins.split(",") if origin.strip()
        ]

    def ensure_data_dir(self) -> Path:
        """The data dir, made if missing, and readable by this user only (0700): it holds the
        SQLite database, the signing key and the media."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        mode = self.data_dir.stat().st_mode & 0o777
        if mode & 0o077:
            log.warning("the data dir %s was open to others (%o): now 0700", self.data_dir, mode)
            self.data_dir.chmod(0o700)
        return self.data_dir

    def signing_key(self) -> bytes:
        """The secret behind signed storage URLs: SFUMATO_SECRET_KEY, or one made once per data
        dir. Raises InsecureSecret for a placeholder or a key too weak to sign with."""
        if self.secret_key:
            weakness = secret_weakness(self.secret_key)
            if weakness is not None:
                raise InsecureSecret(f"SFUMATO_SECRET_KEY {weakness}; {SECRET_ADVICE}")
            log.info("signing key from SFUMATO_SECRET_KEY")
            return self.secret_key.encode()
        path = self.ensure_data_dir() / "secret-key"
        if not path.exists():
            import secrets

            path.write_text(secrets.token_hex(32))
            path.chmod(0o600)
            log.info("signing key made at %s", path)
        else:
            log.info("signing key from %s", path)
        return path.read_text().strip().encode()


SECRET_ADVICE = "make one with: python -c 'import secrets; print(secrets.token_hex(32))'"
# Words of the placeholders in deploy/ and the docs: a key that holds one was never set.
PLACEHOLDER_WORDS = ("change-me", "changeme", "change_me", "example", "placeholder", "secret")
MIN_SECRET_BYTES = 32


class InsecureSecret(ValueError):
    """The configured signing secret would let anyone who guesses it forge file URLs."""


def secret_weakness(key: str) -> str | None:
    """Why `key` must not sign URLs (a placeholder, or under 32 bytes of entropy as its
    alphabet allows: 64 hex digits, 43 base64 characters), or None."""
    lowered = key.lower()
    if any(word in lowered for word in PLACEHOLDER_WORDS):
        return "is a placeholder"
    hexdigits = set("0123456789abcdef")
    base64 = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
    if set(lowered) <= hexdigits:
        bits_per_character = 4.0
    elif set(key) <= base64:
        bits_per_character = 6.0
    else:
        bits_per_character = 6.5  # printable ASCII, generously
    if len(set(key)) < 12 or len(key) * bits_per_character < MIN_SECRET_BYTES * 8:
        return f"has under {MIN_SECRET_BYTES} bytes of entropy"
    return None
