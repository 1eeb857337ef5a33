"""DELETE of one's finished jobs, uploads and styles through HTTP: the stored files go, the
ledger stays, others' and unknown ids are 404, and what a job in flight needs is a 409."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from benchmarks.testkit.images import image_bytes
from core.accounts import authentication
from core.accounts import service as accounts
from core.ids import new_id
from core.tables import JobRow, Media, Style, StyleAsset, Thumbnail
from core.thumbnails import service as thumbnails
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service
from tests.support.uploads import presign, put

UNKNOWN = "0190b5d2-3f1e-7c1a-8b2a-9d0e1f2a3b4c"


def completed_upload(client: httpx.Client) -> dict:
    presigned = presign(client)
    assert put(presigned["uploadUrl"], image_bytes((200, 30, 30))).status_code == 200
    response = client.post(f"/uploads/{presigned['uploadId']}/complete")
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_a_finished_job_is_deleted_with_its_files_and_its_ledger_kept(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        job = wait_done(client, create(client, "[sleep 0] hills", variations=2)["id"])
        urls = [image["url"] for image in job["result"]["images"]]
        assert all(httpx.get(url).status_code == 200 for url in urls)
        email = client.get("/account").json()["data"]["email"]
        before = accounts.statement(service.services.db, email)
        response = client.delete(f"/jobs/{job['id']}")
        assert response.status_code == 204 and response.content == b""
        assert "x-ratelimit-remaining" in response.headers  # limited like reads
        assert_error(client.get(f"/jobs/{job['id']}"), 404, "NOT_FOUND")
        assert_error(client.get(f"/images/{job['id']}"), 404, "NOT_FOUND")
        assert_error(client.post(f"/jobs/{job['id']}/cancel"), 404, "NOT_FOUND")
        assert job["id"] not in [listed["id"] for listed in client.get("/jobs").json()["data"]]
        assert all(httpx.get(url).status_code == 404 for url in urls)
        # Its images no longer resolve as an edit's source.
        edit = client.post("/images/edit", json={"imageId": job["id"], "prompt": "warmer"})
        assert_error(edit, 400, "VALIDATION_ERROR")
        assert_error(client.delete(f"/jobs/{job['id']}"), 404, "NOT_FOUND")
        after = accounts.statement(service.services.db, email)

    def ledger(statement: accounts.Statement) -> list[tuple[str, int, str | None]]:
        return [(entry.id, entry.amount, entry.job_id) for entry in statement.entries]

    assert after.consistent and ledger(after) == ledger(before)
    assert job["id"] in [job_id for _, _, job_id in ledger(after)]
    assert after.account.credit_balance == before.account.credit_balance
    with service.services.db.read() as session:
        row = session.get(JobRow, job["id"])
        assert row is not None and row.deleted_at is not None and row.inputs == {}
        assert session.query(Media).filter(Media.job_id == job["id"]).count() == 0


def test_images_shown_in_the_dashboard_are_deleted_with_their_thumbnails(
    service: Service, key: str
) -> None:
    """The dashboard's small renditions point at their images: they go with them."""
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    storage = service.services.storage
    with service.client(key) as client:
        job = wait_done(client, create(client, "[sleep 0] dunes")["id"])
        upload = completed_upload(client)
        media_ids = [job["result"]["images"][0]["id"], upload["id"]]
        made = [thumbnails.thumbnail_of(service.services, caller.account_id, m) for m in media_ids]
        keys = [thumbnail.storage_key for thumbnail in made if thumbnail is not None]
        assert len(keys) == 2 and all(storage.size_of(key) for key in keys)
        assert client.delete(f"/jobs/{job['id']}").status_code == 204
        assert client.delete(f"/uploads/{upload['id']}").status_code == 204
    with service.services.db.read() as session:
        assert [session.get(Thumbnail, media_id) for media_id in media_ids] == [None, None]
    assert [storage.size_of(key) for key in keys] == [None, None]


def test_a_job_in_flight_is_a_409_until_cancelled(service: Service, key: str) -> None:
    with service.client(key) as client:
        job = create(client, "[sleep 30] hills")
        refused = client.delete(f"/jobs/{job['id']}")
        assert_error(refused, 409, "CONFLICT")
        assert "cancel" in refused.json()["error"]["message"]
        assert client.get(f"/jobs/{job['id']}").status_code == 200
        assert client.post(f"/jobs/{job['id']}/cancel").status_code == 200
        assert client.delete(f"/jobs/{job['id']}").status_code == 204


def test_others_unknown_and_malformed_ids_are_404(service: Service, key: str) -> None:
    other = service.new_key()
    with service.client(other) as client:
        job = wait_done(client, create(client, "[sleep 0] hills")["id"])
        upload = completed_upload(client)
        style_id = saved_style(service, other)
    with service.client(key) as client:
        for path in (
            f"/jobs/{job['id']}",
            f"/uploads/{upload['id']}",
            f"/styles/{style_id}",
            f"/jobs/{UNKNOWN}",
            f"/uploads/{UNKNOWN}",
            f"/styles/{UNKNOWN}",
            "/jobs/not-a-uuid",
            "/uploads/not-a-uuid",
            "/styles/not-a-uuid",
        ):
            assert_error(client.delete(path), 404, "NOT_FOUND")
    with service.client(other) as client:
        assert client.get(f"/jobs/{job['id']}").status_code == 200
        assert httpx.get(upload["url"]).status_code == 200
        assert client.get(f"/styles/{style_id}").status_code == 200


def test_an_upload_is_deleted_with_its_bytes_unless_a_job_in_flight_uses_it(
    service: Service, key: str
) -> None:
    with service.client(key) as client:
        upload = completed_upload(client)
        busy = create(client, "[sleep 30] hills", references=[upload["id"]])
        assert_error(client.delete(f"/uploads/{upload['id']}"), 409, "CONFLICT")
        assert client.post(f"/jobs/{busy['id']}/cancel").status_code == 200
        assert client.delete(f"/uploads/{upload['id']}").status_code == 204
        assert httpx.get(upload["url"]).status_code == 404
        assert_error(client.post(f"/uploads/{upload['id']}/complete"), 404, "NOT_FOUND")
        refused = client.post(
            "/images/generate", json={"prompt": "hills", "references": [upload["id"]]}
        )
        assert_error(refused, 400, "VALIDATION_ERROR")
        # One never completed goes too (its staged bytes with it).
        staged = presign(client)
        assert put(staged["uploadUrl"], b"not yet completed").status_code == 200
        assert client.delete(f"/uploads/{staged['uploadId']}").status_code == 204
        assert_error(client.delete(f"/uploads/{staged['uploadId']}"), 404, "NOT_FOUND")
    assert service.services.storage.size_of(f"staging/{staged['uploadId']}") is None


def saved_style(service: Service, key: str, brand_key: str | None = None) -> str:
    """A style saved straight into the database (extraction has its own tests), with one brand
    image in its folder when `brand_key` names a stored file."""
    caller = authentication.authenticate(service.services.db, key)
    assert caller is not None
    style = Style(
        id=new_id(),
        account_id=caller.account_id,
        name="Test brand",
        colours=[],
        typography=[],
        tone=[],
        aesthetic="",
        logo_key=brand_key,
    )
    with service.services.db.write() as session:
        session.add(style)
        if brand_key is not None:
            session.flush()
            media = session.query(Media).filter(Media.storage_key == brand_key).first()
            if media is None:
                media = Media(
                    id=new_id(),
                    account_id=caller.account_id,
                    kind="brand",
                    storage_key=brand_key,
                    content_type="image/png",
                    width=8,
                    height=8,
                )
                session.add(media)
                session.flush()
            session.add(
                StyleAsset(
                    id=new_id(),
                    style_id=style.id,
                    account_id=caller.account_id,
                    media_id=media.id,
                    storage_key=brand_key,
                    name="logo.png",
                    source="brand",
                    embedding=np.zeros(384, np.float32).tobytes(),
                )
            )
    return style.id


@pytest.mark.parametrize("shared", [False, True])
def test_a_style_is_deleted_with_its_own_brand_images(
    service: Service, key: str, shared: bool
) -> None:
    brand_key = f"brand/{new_id()}.png"
    service.services.storage.put_bytes(brand_key, image_bytes((10, 20, 30)), "image/png")
    style_id = saved_style(service, key, brand_key)
    other_style = saved_style(service, key, brand_key) if shared else None
    with service.client(key) as client:
        generated = wait_done(client, create(client, "[sleep 0] hills", styleId=style_id)["id"])
        assert client.delete(f"/styles/{style_id}").status_code == 204
        assert_error(client.get(f"/styles/{style_id}"), 404, "NOT_FOUND")
        assert style_id not in [style["id"] for style in client.get("/styles").json()["data"]]
        # A job made with the style keeps its result; a new request naming it is a 400.
        assert client.get(f"/jobs/{generated['id']}").json()["data"]["status"] == "completed"
        refused = client.post("/images/generate", json={"prompt": "hills", "styleId": style_id})
        assert_error(refused, 400, "VALIDATION_ERROR")
        if other_style is not None:
            assets = client.get(f"/styles/{other_style}/assets").json()["data"]
            assert [asset["name"] for asset in assets] == ["logo.png"]
    stored = service.services.storage.size_of(brand_key)
    assert (stored is not None) == shared
