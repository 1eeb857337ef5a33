"""Uploads through HTTP: presign, PUT straight to storage with no key, complete.

The flow runs against local storage in both modes and against a real S3-protocol server.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import uuid
from collections.abc import Iterable
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from PIL import Image
from sqlalchemy import update

from benchmarks.testkit.images import image_bytes
from benchmarks.testkit.waits import wait_until
from core.clock import utcnow
from core.storage.local import LocalStorage
from core.tables import Upload
from core.uploads.service import final_key, purge_abandoned, staging_key
from tests.support.images import animated_bomb
from tests.support.service import Service
from tests.support.uploads import presign, put

MiB = 1024 * 1024


# Local storage in both modes, and S3 (tests/conftest.py).
EVERY_STORAGE = pytest.mark.parametrize("service", ["embedded", "distributed", "s3"], indirect=True)
ONLY_S3 = pytest.mark.parametrize("service", ["s3"], indirect=True)


def stored_size(service: Service, upload_id: str) -> int | None:
    return service.services.storage.size_of(staging_key(upload_id))


@EVERY_STORAGE
def test_three_steps_give_an_image_and_completing_twice_gives_the_same(
    service: Service,
) -> None:
    data = image_bytes((20, 140, 220), size=(120, 80))
    with service.client(service.new_key()) as client:
        presigned = presign(client)
        assert set(presigned) == {"uploadId", "uploadUrl", "expiresIn"}
        assert presigned["expiresIn"] == 3600
        upload_url = presigned["uploadUrl"]
        assert upload_url.startswith("http://") and "/v1/" not in upload_url
        assert put(upload_url, data).status_code == 200  # no API key: the URL is the permission
        first = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert first.status_code == 200, first.text
        upload = first.json()["data"]
        assert upload["id"] == presigned["uploadId"]
        assert (upload["contentType"], upload["width"], upload["height"]) == ("image/png", 120, 80)
        assert httpx.get(upload["url"]).content == data
        second = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert second.status_code == 200
        again = second.json()["data"]
        assert {**again, "url": None} == {**upload, "url": None}
        assert httpx.get(again["url"]).content == data


@EVERY_STORAGE
def test_the_real_type_is_reported_not_the_declared_one(service: Service) -> None:
    jpeg = image_bytes((200, 30, 30), size=(40, 30), format="JPEG")
    with service.client(service.new_key()) as client:
        presigned = presign(client, "image/png")
        assert put(presigned["uploadUrl"], jpeg, "image/png").status_code == 200
        upload = client.post(f"/uploads/{presigned['uploadId']}/complete").json()["data"]
    assert upload["contentType"] == "image/jpeg"
    assert urlsplit(upload["url"]).path.endswith(".jpg")
    stored = Image.open(io.BytesIO(httpx.get(upload["url"]).content))
    assert (stored.format, stored.size) == ("JPEG", (40, 30))


@EVERY_STORAGE
@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"GIF89a but not really an image", "is not a PNG, JPEG, GIF or WebP image"),
        (image_bytes((1, 2, 3))[:70], "is corrupt or truncated"),
        (animated_bomb(5000, 5000, 9), "is an animation of 9 frames of 5000x5000 pixels"),
    ],
)
def test_bytes_that_are_not_an_acceptable_image_are_refused_and_deleted(
    service: Service, payload: bytes, reason: str
) -> None:
    with service.client(service.new_key()) as client:
        presigned = presign(client, "image/gif")
        assert put(presigned["uploadUrl"], payload, "image/gif").status_code == 200
        assert stored_size(service, presigned["uploadId"]) == len(payload)
        refused = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert error["details"]["file"].startswith(reason), error
        assert stored_size(service, presigned["uploadId"]) is None
        again = client.post(f"/uploads/{presigned['uploadId']}/complete").json()["error"]
        assert again["details"]["file"].startswith("has not been uploaded")


@EVERY_STORAGE
def test_complete_before_put_is_400_and_other_uploads_are_404(service: Service) -> None:
    with (
        service.client(service.new_key()) as client,
        service.client(service.new_key()) as stranger,
    ):
        presigned = presign(client)
        early = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert early.status_code == 400
        assert early.json()["error"]["details"] == {
            "file": "has not been uploaded (PUT it to the uploadUrl first)"
        }
        for upload_id in (presigned["uploadId"], str(uuid.uuid4()), "not-a-uuid"):
            foreign = stranger.post(f"/uploads/{upload_id}/complete")
            assert foreign.status_code == 404
            assert foreign.json()["error"]["code"] == "NOT_FOUND"


def test_presign_takes_only_the_four_image_types(service: Service, key: str) -> None:
    with service.client(key) as client:
        for body, field in (
            ({"filename": "a.bmp", "contentType": "image/bmp"}, "contentType"),
            ({"contentType": "image/png"}, "filename"),
            ({"filename": "", "contentType": "image/png"}, "filename"),
            ({"filename": "a.png", "contentType": "image/png", "size": 3}, "size"),
        ):
            response = client.post("/uploads", json=body)
            assert response.status_code == 400, body
            assert set(response.json()["error"]["details"]) == {field}
        for content_type in ("image/png", "image/jpeg", "image/gif", "image/webp"):
            assert presign(client, content_type)["uploadUrl"]


def test_local_put_refuses_bad_signatures_other_types_and_expired_urls(
    service: Service, key: str
) -> None:
    data = image_bytes((0, 0, 0))
    with service.client(key) as client:
        presigned = presign(client)
    url = presigned["uploadUrl"]
    upload_id = presigned["uploadId"]
    expired = service.services.storage.upload_url_for(
        staging_key(upload_id),
        content_type="image/png",
        max_bytes=service.services.settings.max_image_bytes,
        base_url=service.url,
        expires_in=-1,
    )
    for attempt, content_type, message in (
        (url.replace("signature=", "signature=0"), "image/png", "Signature invalid or expired"),
        (url.replace("maxBytes=", "maxBytes=9"), "image/png", "Signature invalid or expired"),
        (expired, "image/png", "Signature invalid or expired"),
        (url, "image/jpeg", "Content-Type must be image/png"),
        (url, None, "Content-Type must be image/png"),
    ):
        response = put(attempt, data, content_type)
        assert response.status_code == 403, (attempt, content_type)
        error = response.json()["error"]
        assert error["code"] == "FORBIDDEN"
        assert error["message"].startswith(message)
    assert stored_size(service, upload_id) is None


def _raw_put(url: str, headers: dict[str, str], chunks: Iterable[bytes]) -> tuple[int, dict]:
    """PUT over a bare socket, so the test decides how much of the body is ever sent."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        head = f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
        sock.sendall(head.encode())
        try:
            for chunk in chunks:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered before taking the whole body, as it should
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, json.loads(response.read())


def test_local_put_over_the_size_limit_is_413_without_storing(service: Service, key: str) -> None:
    limit = service.services.settings.max_image_bytes
    assert limit == 25 * MiB
    with service.client(key) as client:
        presigned = presign(client)
    headers = {"Content-Type": "image/png"}
    # Declared too large: answered from the headers, before any of the body is sent.
    status, body = _raw_put(
        presigned["uploadUrl"], {**headers, "Content-Length": str(limit + 1)}, []
    )
    assert (status, body["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    # Not declared (chunked): cut off while streaming, once past the limit.
    chunks = (b"\0" * MiB for _ in range(26))
    status, body = _raw_put(
        presigned["uploadUrl"], {**headers, "Transfer-Encoding": "chunked"}, chunks
    )
    assert (status, body["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    assert stored_size(service, presigned["uploadId"]) is None
    # Exactly at the limit is accepted by storage (and then refused as not an image).
    assert put(presigned["uploadUrl"], b"\0" * limit).status_code == 200
    assert stored_size(service, presigned["uploadId"]) == limit


@ONLY_S3
def test_s3_upload_urls_bind_type_and_expiry_and_size_is_checked_on_complete(
    service: Service,
) -> None:
    with service.client(service.new_key()) as client:
        presigned = presign(client)
        query = parse_qs(urlsplit(presigned["uploadUrl"]).query)
        # S3 itself refuses another Content-Type (a signed header) and a late PUT.
        assert "content-type" in query["X-Amz-SignedHeaders"][0].split(";")
        assert query["X-Amz-Expires"] == ["3600"]
        limit = service.services.settings.max_image_bytes
        assert put(presigned["uploadUrl"], b"\0" * (limit + 1)).status_code == 200
        too_large = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert too_large.status_code == 413
        assert too_large.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
        assert stored_size(service, presigned["uploadId"]) is None


def test_abandoned_uploads_lose_their_staged_bytes(service: Service) -> None:
    """An upload never completed a day after its URL expired is purged by the housekeeping."""
    with service.client(service.new_key()) as client:
        abandoned, kept = presign(client), presign(client)
        for presigned in (abandoned, kept):
            assert put(presigned["uploadUrl"], image_bytes((1, 2, 3))).status_code == 200
    with service.services.db.write() as session:
        session.execute(
            update(Upload)
            .where(Upload.id == abandoned["uploadId"])
            .values(expires_at=utcnow() - timedelta(hours=25))
        )
    assert purge_abandoned(service.services) == 1
    assert stored_size(service, abandoned["uploadId"]) is None
    assert stored_size(service, kept["uploadId"]) is not None
    with service.services.db.read() as session:
        assert session.get(Upload, abandoned["uploadId"]) is None


def test_what_an_interrupted_complete_stored_is_purged_with_the_abandoned_upload(
    service: Service,
) -> None:
    """A complete stores the final object before its database write; when that write fails
    (PostgreSQL cut: found by the chaos soak) no row names the object, and the upload stays
    uncompleted. If it is never completed, the purge of abandoned uploads takes the object too."""
    data = image_bytes((4, 5, 6))
    with service.client(service.new_key()) as client:
        presigned = presign(client)
        assert put(presigned["uploadUrl"], data).status_code == 200
    upload_id = presigned["uploadId"]
    storage = service.services.storage
    interrupted = final_key(upload_id, ".png")
    storage.put_bytes(interrupted, data, "image/png")  # the complete's write, then the cut
    with service.services.db.write() as session:
        session.execute(
            update(Upload)
            .where(Upload.id == upload_id)
            .values(expires_at=utcnow() - timedelta(hours=25))
        )
    assert purge_abandoned(service.services) == 1
    assert storage.size_of(interrupted) is None
    assert stored_size(service, upload_id) is None


@EVERY_STORAGE
def test_a_completed_uploads_url_takes_no_more_bytes_and_late_ones_are_purged(
    service: Service,
) -> None:
    """Issue 22 item 3: a second PUT after complete is refused (local storage, where the
    service answers the PUT) or, on S3, removed by housekeeping once the URL has expired."""
    data = image_bytes((9, 9, 9))
    with service.client(service.new_key()) as client:
        presigned = presign(client)
        assert put(presigned["uploadUrl"], data).status_code == 200
        done = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert done.status_code == 200
        late = put(presigned["uploadUrl"], b"\0" * MiB)
        if isinstance(service.services.storage, LocalStorage):
            assert late.status_code == 409
            assert late.json()["error"] == {
                "code": "CONFLICT",
                "message": "The upload is already completed; its URL takes no more PUTs",
                "details": None,
            }
            assert stored_size(service, presigned["uploadId"]) is None
        else:
            assert late.status_code == 200  # S3 answers presigned PUTs itself
            assert stored_size(service, presigned["uploadId"]) == MiB
        with service.services.db.write() as session:
            session.execute(
                update(Upload)
                .where(Upload.id == presigned["uploadId"])
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )

        # The housekeeping (every 0.5 s in tests) removes whatever a late PUT staged.
        def purged() -> bool:
            with service.services.db.read() as session:
                upload = session.get(Upload, presigned["uploadId"])
                return upload is not None and upload.staging_purged_at is not None

        wait_until(purged, 10, "the staging of the completed upload purged")
        assert stored_size(service, presigned["uploadId"]) is None
        again = client.post(f"/uploads/{presigned['uploadId']}/complete")
        assert again.json()["data"] == {**done.json()["data"], "url": again.json()["data"]["url"]}
        assert httpx.get(again.json()["data"]["url"]).content == data
