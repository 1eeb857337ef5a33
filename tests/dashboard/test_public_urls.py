"""The dashboard names files by the configured origins, as the API does, never by the request's
Host (issue 31 M5): its images, thumbnails and upload URLs come from the one URL builder
(gateway/dependencies.py), so a forged Host steers none of them."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import httpx
import pytest

from core.accounts import api_keys, passwords
from core.accounts import service as accounts
from tests.conftest import COMMON_ENV
from tests.support.http_jobs import create, wait_done
from tests.support.service import Mode, Service, running_service

pytestmark = pytest.mark.slow
SIGNIN = re.compile(r'name="signin_token" value="([^"]+)"')
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
THUMBNAIL = re.compile(r'<img src="([^"]+)"')
FILES = "https://files.example.test/"
FORGED = {"Host": "attacker.example"}


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    env = {
        **COMMON_ENV,
        "SFUMATO_PUBLIC_URL": "https://api.example.test",
        "SFUMATO_FILES_URL": FILES,
    }
    mode = Mode("embedded", env, False)
    with running_service(mode, tmp_path_factory.mktemp("public-urls")) as service:
        yield service


def test_dashboard_pages_and_presigns_use_the_configured_origins(configured: Service) -> None:
    email, password = f"urls-{secrets.token_hex(4)}@test.local", secrets.token_urlsafe(12)
    accounts.create_account(configured.services.db, email, "pro", 100)
    passwords.set_password(configured.services.db, email, password)
    key = api_keys.create_key(configured.services.db, email, "api", None).plaintext
    with configured.client(key) as api:
        wait_done(api, create(api, "[sleep 0] a picture to list")["id"])
    with httpx.Client(base_url=configured.url + "/dashboard", timeout=30) as client:
        token = SIGNIN.search(client.get("/sign-in").text)
        assert token is not None
        signed = client.post(
            "/sign-in",
            data={"email": email, "password": password, "signin_token": token.group(1)},
        )
        assert signed.status_code == 303, signed.text
        uploads = client.get("/uploads", headers=FORGED).text
        csrf = CSRF.search(uploads)
        assert csrf is not None
        presigned = client.post(
            "/uploads/presign",
            json={"filename": "a.png", "contentType": "image/png"},
            headers={**FORGED, "X-CSRF-Token": csrf.group(1)},
        )
        assert presigned.status_code == 200, presigned.text
        assert presigned.json()["uploadUrl"].startswith(FILES + "files/")
        page = client.get("/jobs", headers=FORGED).text
        thumbnail = THUMBNAIL.search(page)
        assert thumbnail is not None, "the job's picture is on the page"
        redirected = client.get(thumbnail.group(1).removeprefix("/dashboard"), headers=FORGED)
    assert redirected.status_code == 302
    assert redirected.headers["location"].startswith(FILES + "files/")
    assert "attacker.example" not in page and "attacker.example" not in uploads
