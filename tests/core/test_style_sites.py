"""What counts as the same site when an account extracts one again (core/styles/sites.py)."""

from __future__ import annotations

import pytest

from core.styles.sites import site_address


@pytest.mark.parametrize(
    ("url", "site"),
    [
        ("https://brand.example", "https://brand.example/"),
        ("https://Brand.Example./", "https://brand.example/"),
        ("HTTPS://brand.example:443/shop/?utm=x#top", "https://brand.example/shop"),
        ("https://user:pw@brand.example/shop//", "https://brand.example/shop"),
        ("http://brand.example:80/", "http://brand.example/"),
        ("http://brand.example:8080/", "http://brand.example:8080/"),
        ("https://[2001:DB8::1]:443/a", "https://[2001:db8::1]/a"),
        ("https://brand.example/Shop", "https://brand.example/Shop"),
    ],
)
def test_site_address(url: str, site: str) -> None:
    assert site_address(url) == site


def test_http_and_https_are_different_sites() -> None:
    assert site_address("http://brand.example/") != site_address("https://brand.example/")
