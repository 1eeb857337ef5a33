"""The SSRF-safe fetcher against a real local web server: what it fetches and what it refuses.

Refusals must happen before any connection: the server's request log proves it.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.testkit.images import image_bytes
from core.fetch import (
    FetchPolicy,
    FetchRefused,
    fetch,
    parse_allow_list,
    refusal_reason,
    refusal_without_lookup,
)
from core.settings import Settings
from tests.support.web import IMAGE_COLOUR, WebServer, web_server


@pytest.fixture(scope="module")
def web() -> Iterator[WebServer]:
    with web_server() as server:
        yield server


@pytest.fixture(autouse=True)
def forget_requests(web: WebServer) -> None:
    web.seen.clear()


def policy(allow: str = "", **limits: Any) -> FetchPolicy:
    hosts, networks = parse_allow_list(allow)
    return FetchPolicy(allowed_hosts=hosts, allowed_networks=networks, **limits)


def refused(url: str, rules: FetchPolicy) -> str:
    with pytest.raises(FetchRefused) as caught:
        fetch(url, rules)
    return str(caught.value)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("192.0.2.10", "private"),  # TEST-NET-1, documentation only
        ("2001:db8::1", "private"),
        # 6to4 around a non-public IPv4 (loopback, the metadata address), the deprecated
        # site-local range, the newer documentation range: the allow rule refuses them all.
        ("2002:7f00:1::", "6to4"),
        ("2002:a9fe:a9fe::", "6to4"),
        ("2002:0a00:0001::1", "6to4"),
        ("fec0::1", "site-local"),
        ("3fff::1", "not a public address"),
        ("3fff:0fff::1", "not a public address"),
        ("64:ff9b::a00:1", "reserved"),  # NAT64 of 10.0.0.1
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "private"),  # Teredo
        ("4000::1", "reserved"),  # outside global unicast
    ],
)
def test_refusal_reason_names_each_kind_of_internal_address(address: str, reason: str) -> None:
    found = refusal_reason(ipaddress.ip_address(address))
    assert found is not None and reason in found, found


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "2002:0808:0808::1"]
)
def test_public_addresses_are_not_refused(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


def test_allow_list_parses_hosts_and_networks_and_settings_build_the_policy() -> None:
    hosts, networks = parse_allow_list(" Images.Intranet. , 127.0.0.1,10.0.0.0/8,,fd00::/8 ")
    assert hosts == {"images.intranet"}
    assert [str(network) for network in networks] == ["127.0.0.1/32", "10.0.0.0/8", "fd00::/8"]
    built = FetchPolicy.from_settings(Settings(fetch_allow="localhost"), max_bytes=123)
    assert built.allowed_hosts == {"localhost"}
    assert (built.max_bytes, built.timeout_seconds, built.max_redirects) == (123, 10.0, 5)


def test_allow_listed_host_is_fetched_over_plain_http(web: WebServer) -> None:
    fetched = fetch(web.url("/image.png"), policy("127.0.0.1"))
    assert fetched.body == image_bytes(IMAGE_COLOUR)
    assert fetched.content_type == "image/png"
    assert web.paths == ["/image.png"]


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback"),
        # A name: what it resolves to is never shown (issue 22 item 10).
        ("localhost", "localhost resolves to a non-public address"),
        ("2130706433", "resolves to a non-public address"),  # decimal
        ("0177.0.0.1", "resolves to a non-public address"),  # octal
        ("0x7f.0.0.1", "resolves to a non-public address"),  # hex
        ("0x7f000001", "resolves to a non-public address"),  # one hex number
        ("127.1", "resolves to a non-public address"),  # short form
        ("[::1]", "loopback"),
        ("[::ffff:127.0.0.1]", "IPv4-mapped"),
        ("0.0.0.0", "unspecified"),
        ("[::]", "unspecified"),
    ],
)
def test_every_spelling_of_this_machine_is_refused_before_connecting(
    web: WebServer, host: str, reason: str
) -> None:
    for scheme in ("https", "http"):
        message = refused(f"{scheme}://{host}:{web.port}/image.png", policy())
        assert reason in message, message
        if "resolves" in reason:
            assert "127.0.0.1" not in message, "a name's address is never shown"
    assert web.paths == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://169.254.169.254/latest/meta-data/", "link-local"),
        ("https://10.0.0.1/a.png", "private"),
        ("https://192.168.0.1/a.png", "private"),
        ("https://100.64.0.1/a.png", "carrier-grade NAT"),
        ("https://224.0.0.1/a.png", "multicast"),
        ("https://240.0.0.1/a.png", "reserved"),
        ("https://[fe80::1]/a.png", "link-local"),
        ("ftp://127.0.0.1/a.png", "only https"),
        ("file:///etc/passwd", "only https"),
        ("https://user:secret@127.0.0.1/a.png", "credentials"),
        ("https:///a.png", "no host"),
        ("https://127.0.0.1:99999/a.png", "not a valid URL"),
    ],
)
def test_internal_and_malformed_targets_are_refused(url: str, reason: str) -> None:
    # None of these is ever connected to: the refusal comes from the address check.
    message = refused(url, policy())
    assert reason in message, message


def test_plain_http_is_only_for_allow_listed_hosts(
    web: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fetch(web.url("/image.png"), policy("127.0.0.0/8")).body
    # Allowing a name does not allow the address under another name.
    assert "127.0.0.1 is a loopback address" in refused(web.url("/image.png"), policy("localhost"))
    real_getaddrinfo = socket.getaddrinfo

    def public(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "public.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", public)
    assert "only https" in refused("http://public.test/a.png", policy())


def test_redirect_from_an_allowed_host_to_loopback_is_refused(web: WebServer) -> None:
    target = web.url("/image.png")
    start = web.url(f"/redirect?to={target}", host="localhost")
    message = refused(start, policy("localhost"))
    assert "127.0.0.1 is a loopback address" in message
    assert web.paths == [f"/redirect?to={target}"]
    assert web.seen[0].host == f"localhost:{web.port}"


def test_redirects_are_rechecked_and_limited(web: WebServer) -> None:
    rules = policy("127.0.0.1")
    assert fetch(web.url("/hops/5"), rules).body == image_bytes(IMAGE_COLOUR)
    web.seen.clear()
    assert "more than 5 redirects" in refused(web.url("/hops/6"), rules)
    assert len(web.paths) == 6
    assert "more than 1 redirects" in refused(
        web.url("/hops/2"), policy("127.0.0.1", max_redirects=1)
    )


def test_size_is_bounded_whether_or_not_it_is_declared(web: WebServer) -> None:
    rules = policy("127.0.0.1", max_bytes=1000)
    assert len(fetch(web.url("/big?bytes=1000&length=0"), rules).body) == 1000
    assert "larger than 1000 bytes" in refused(web.url("/big?bytes=1001&length=1"), rules)
    assert "larger than 1000 bytes" in refused(web.url("/big?bytes=50000&length=0"), rules)


def test_time_is_bounded(web: WebServer) -> None:
    started = time.monotonic()
    message = refused(web.url("/slow"), policy("127.0.0.1", timeout_seconds=1.0))
    assert "too long" in message
    assert time.monotonic() - started < 2.5


def test_an_error_status_is_refused(web: WebServer) -> None:
    assert "HTTP 404" in refused(web.url("/status/404"), policy("127.0.0.1"))


def test_the_checked_address_is_the_one_connected_to(
    web: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that resolves to an allowed address once and to another one afterwards (DNS
    rebinding) is fetched from the first: the host is resolved once, never again on connect."""
    real_getaddrinfo = socket.getaddrinfo
    answers = iter(["127.0.0.1", "127.0.0.2", "127.0.0.2"])
    lookups: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real_getaddrinfo(host, port, *args, **kwargs)
        lookups.append(host)
        return real_getaddrinfo(next(answers), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    fetched = fetch(web.url("/image.png", host="rebind.test"), policy("127.0.0.1"))
    assert fetched.body == image_bytes(IMAGE_COLOUR)
    assert lookups == ["rebind.test"]
    assert web.seen[0].host == f"rebind.test:{web.port}"


def test_what_is_never_fetched_is_told_without_resolving_a_name() -> None:
    policy = FetchPolicy(*parse_allow_list("127.0.0.1,10.1.0.0/16,intranet.local"))
    never = {
        "https://192.168.1.1/": "192.168.1.1 is a private address",
        "https://[fe80::1]/": "fe80::1 is a link-local address",
        "https://127.0.0.2/": "127.0.0.2 is a loopback address",
        "ftp://example.com/": "only https URLs are fetched",
        "https://user:pw@example.com/": "URLs with credentials are not fetched",
    }
    for url, reason in never.items():
        assert refusal_without_lookup(url, policy) == reason, url
    # Allowed, public, or a name (only a fetch can tell what it resolves to).
    for url in (
        "http://127.0.0.1:8000/",
        "https://10.1.2.3/",
        "https://93.184.215.14/",
        "https://intranet.local/",
        "https://no-such-name.invalid/",
    ):
        assert refusal_without_lookup(url, policy) is None, url
