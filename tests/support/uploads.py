"""Uploads through the HTTP API, as the tests drive them: presign, then PUT to the signed URL."""

from __future__ import annotations

import httpx


def presign(client: httpx.Client, content_type: str = "image/png") -> dict:
    response = client.post("/uploads", json={"filename": "photo.png", "contentType": content_type})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def put(url: str, data: bytes, content_type: str | None = "image/png") -> httpx.Response:
    headers = {"Content-Type": content_type} if content_type else {}
    return httpx.put(url, content=data, headers=headers, timeout=60)
