"""The one way this service fetches a URL a caller named: safe against SSRF.

A caller-supplied URL must never make the service talk to its own network (cloud metadata at
169.254.169.254, databases on 10.x, admin ports on loopback). So:

- only https, except for allow-listed hosts (`SFUMATO_FETCH_ALLOW`), which may use http;
- the host is resolved once and every address it resolves to must be a public one (or
  allow-listed); the connection then goes to that checked address, with the original name in
  the Host header and in TLS SNI/certificate checks, so a second DNS answer cannot swap in an
  internal address (no rebinding window);
- redirects are followed by hand, each one checked the same way, at most `max_redirects`;
- the whole fetch, DNS included, has one deadline, and the body is streamed with a byte limit.

`post` sends under the same rules (webhooks, core/webhooks/): no redirect is followed there, a
redirect is an answer like any other, and only the first bytes of the answer are read.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from urllib.parse import SplitResult, urljoin, urlsplit

import httpx

from core.settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

REDIRECT_STATUSES = {301, 302, 303, 307, 308}
DEFAULT_PORTS = {"http": 80, "https": 443}
CARRIER_GRADE_NAT = ipaddress.IPv4Network("100.64.0.0/10")
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
# Inside 2000::/3 but not public, and not (yet) special to every Python's `is_global`.
IPV6_NOT_PUBLIC = (ipaddress.IPv6Network("3fff::/20"),)  # documentation (RFC 9637)
USER_AGENT = "Sfumato-Fetcher/1"

# getaddrinfo has no timeout of its own; it runs here so the fetch deadline can cut it short.
_resolver_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="fetch-dns")


class FetchRefused(Exception):
    """The URL was not fetched, or its answer was not accepted; the message says why and is
    fit to show the caller."""


@dataclass(frozen=True)
class FetchPolicy:
    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = ()
    timeout_seconds: float = 10.0
    max_bytes: int = 25 * 1024 * 1024
    max_redirects: int = 5

    @classmethod
    def from_settings(cls, settings: Settings, max_bytes: int) -> FetchPolicy:
        hosts, networks = parse_allow_list(settings.fetch_allow)
        return cls(
            allowed_hosts=hosts,
            allowed_networks=networks,
            timeout_seconds=settings.fetch_timeout_seconds,
            max_bytes=max_bytes,
            max_redirects=settings.fetch_max_redirects,
        )

    def allows_address(self, address: IPAddress) -> bool:
        return any(address in network for network in self.allowed_networks)


def parse_allow_list(allow: str) -> tuple[frozenset[str], tuple[IPNetwork, ...]]:
    """Comma-separated host names, IP addresses and CIDRs -> (names, networks)."""
    hosts: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in filter(None, (part.strip() for part in allow.split(","))):
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.lower().rstrip("."))
    return frozenset(hosts), tuple(networks)


@dataclass(frozen=True)
class Fetched:
    url: str
    content_type: str | None
    body: bytes


def refusal_reason(address: IPAddress) -> str | None:
    """Why a connection to `address` is refused, or None for a public address. The rule allows
    rather than denies: an address must be global (`is_global`) and, for IPv6, global unicast
    outside the ranges Python does not know to be special yet; the named kinds before it only
    make the message clearer."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return "an IPv4-mapped IPv6 address"
        embedded = address.sixtofour
        if embedded is not None and refusal_reason(embedded) is not None:
            return "a 6to4 address of a non-public IPv4 address"
        if address.is_site_local:
            return "a site-local address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv4Address) and address in CARRIER_GRADE_NAT:
        return "a carrier-grade NAT address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "not a public address"
    if isinstance(address, ipaddress.IPv6Address) and (
        address not in IPV6_GLOBAL_UNICAST or any(address in network for network in IPV6_NOT_PUBLIC)
    ):
        return "not a public address"
    return None


@dataclass(frozen=True)
class _Target:
    """One checked hop: where to connect and what to call the host while there."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[IPAddress, ...]

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    def url_for(self, address: IPAddress) -> str:
        literal = f"[{address}]" if address.version == 6 else str(address)
        return f"{self.scheme}://{literal}:{self.port}{self.path}"


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchRefused("the fetch took too long")
    return left


def _resolve(host: str, port: int, deadline: float) -> tuple[IPAddress, ...]:
    future = _resolver_pool.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        answers = future.result(timeout=_remaining(deadline))
    except FutureTimeout:
        raise FetchRefused("resolving the host took too long") from None
    except (OSError, UnicodeError):
        raise FetchRefused(f"the host {host} could not be resolved") from None
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in answers:
        address = ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise FetchRefused(f"the host {host} could not be resolved")
    return tuple(addresses)


def _is_address_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _parse(url: str) -> tuple[SplitResult, str, str, int]:
    """The URL's parts, scheme, host (IDNA) and port; FetchRefused for what is never fetched
    whatever the host resolves to."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise FetchRefused("is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise FetchRefused("only https URLs are fetched")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused("URLs with credentials are not fetched")
    if not parts.hostname:
        raise FetchRefused("the URL has no host")
    try:
        host = parts.hostname.rstrip(".").encode("idna").decode("ascii")
    except UnicodeError:
        raise FetchRefused("the URL's host is not a valid name") from None
    return parts, scheme, host, port or DEFAULT_PORTS[scheme]


def refusal_without_lookup(url: str, policy: FetchPolicy) -> str | None:
    """Why `url` can never be fetched, judged without resolving any name: not a URL the
    fetcher takes, or a literal address it refuses that the allow-list does not name. None
    when only a fetch can tell. A create asks this so that a job that could never fetch is
    refused before it is charged."""
    try:
        _, _, host, _ = _parse(url)
    except FetchRefused as refused:
        return str(refused)
    if not _is_address_literal(host) or host in policy.allowed_hosts:
        return None
    address = ipaddress.ip_address(host)
    if policy.allows_address(address):
        return None
    reason = refusal_reason(address)
    return None if reason is None else f"{host} is {reason}"


def _check(url: str, policy: FetchPolicy, deadline: float) -> _Target:
    """Parse, resolve and vet one URL; raises FetchRefused before any connection is made."""
    parts, scheme, host, port = _parse(url)
    addresses = _resolve(host, port, deadline)
    host_allowed = host in policy.allowed_hosts
    for address in addresses:
        if host_allowed or policy.allows_address(address):
            continue
        reason = refusal_reason(address)
        if reason is not None:
            if _is_address_literal(host):
                raise FetchRefused(f"{host} is {reason}")
            # What a name resolves to is the deployment's business, never the caller's.
            raise FetchRefused(f"{host} resolves to a non-public address")
    trusted = host_allowed or all(policy.allows_address(address) for address in addresses)
    if scheme == "http" and not trusted:
        raise FetchRefused("only https URLs are fetched")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return _Target(scheme, host, port, path, addresses)


def _connect_and_send(
    client: httpx.Client,
    target: _Target,
    deadline: float,
    method: str = "GET",
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """Send the request to the first checked address that accepts a connection."""
    last_error: Exception | None = None
    for address in target.addresses:
        timeout = _remaining(deadline)
        request = client.build_request(
            method,
            target.url_for(address),
            content=content,
            headers={
                **(headers or {}),
                "Host": target.host_header,
                "User-Agent": USER_AGENT,
                "Accept": "*/*",
            },
            # The certificate is checked against the name, not the address we connect to.
            extensions={"sni_hostname": target.host, "timeout": httpx.Timeout(timeout).as_dict()},
        )
        try:
            return client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            last_error = error  # try the host's next address
        except httpx.TimeoutException:
            raise FetchRefused("the fetch took too long") from None
        except httpx.HTTPError as error:
            raise FetchRefused(f"the request failed ({type(error).__name__})") from None
    raise FetchRefused(f"could not connect to {target.host}") from last_error


def _read_body(response: httpx.Response, policy: FetchPolicy, deadline: float) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise FetchRefused(f"the answer is larger than {policy.max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > policy.max_bytes:
                raise FetchRefused(f"the answer is larger than {policy.max_bytes} bytes")
            chunks.append(chunk)
            _remaining(deadline)
    except httpx.TimeoutException:
        raise FetchRefused("the fetch took too long") from None
    except httpx.HTTPError as error:
        raise FetchRefused(f"reading the answer failed ({type(error).__name__})") from None
    return b"".join(chunks)


def fetch(url: str, policy: FetchPolicy) -> Fetched:
    """GET `url` under `policy`; the body of the final 2xx answer, or FetchRefused."""
    deadline = time.monotonic() + policy.timeout_seconds
    # No proxies from the environment: a proxy would connect to whatever the name resolves to.
    with httpx.Client(trust_env=False, follow_redirects=False) as client:
        current = url
        for _hop in range(policy.max_redirects + 1):
            target = _check(current, policy, deadline)
            response = _connect_and_send(client, target, deadline)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    current = urljoin(current, location)
                    continue
                if not 200 <= response.status_code < 300:
                    raise FetchRefused(f"the server answered HTTP {response.status_code}")
                body = _read_body(response, policy, deadline)
                return Fetched(current, response.headers.get("content-type"), body)
            finally:
                response.close()
    raise FetchRefused(f"more than {policy.max_redirects} redirects")


def vet(url: str, policy: FetchPolicy) -> None:
    """Check `url` as a fetch would (scheme, host, every address it resolves to), connecting to
    nothing: FetchRefused says why it would be refused."""
    _check(url, policy, time.monotonic() + policy.timeout_seconds)


@dataclass(frozen=True)
class Posted:
    status_code: int
    # The answer's first bytes, at most the policy's max_bytes (the rest is never read).
    body: bytes


def post(url: str, content: bytes, headers: dict[str, str], policy: FetchPolicy) -> Posted:
    """POST `content` to `url` under `policy`, following no redirect; whatever the server
    answers (any status), or FetchRefused when the URL is refused or nothing answered in time."""
    deadline = time.monotonic() + policy.timeout_seconds
    with httpx.Client(trust_env=False, follow_redirects=False) as client:
        target = _check(url, policy, deadline)
        response = _connect_and_send(client, target, deadline, "POST", content, headers)
        try:
            return Posted(response.status_code, _read_start(response, policy, deadline))
        finally:
            response.close()


def _read_start(response: httpx.Response, policy: FetchPolicy, deadline: float) -> bytes:
    """The answer's first `max_bytes`: a receiver's long answer is cut, not refused."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            chunks.append(chunk[: policy.max_bytes - size])
            size += len(chunks[-1])
            if size >= policy.max_bytes:
                break
            _remaining(deadline)
    except httpx.TimeoutException:
        raise FetchRefused("the answer took too long") from None
    except httpx.HTTPError as error:
        raise FetchRefused(f"reading the answer failed ({type(error).__name__})") from None
    return b"".join(chunks)
