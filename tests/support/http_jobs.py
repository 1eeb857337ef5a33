"""Jobs through the HTTP API, as the tests drive them: create an image job, read its status,
long-poll an image or video job until it ends."""

from __future__ import annotations

import httpx


def create(client: httpx.Client, prompt: str, **fields: object) -> dict:
    response = client.post("/images/generate", json={"prompt": prompt, **fields})
    assert response.status_code == 202, response.text
    return response.json()["data"]


def wait_done(client: httpx.Client, job_id: str) -> dict:
    for _ in range(10):
        job = client.get(f"/jobs/{job_id}", params={"wait": "true"}).json()["data"]
        if job["status"] in ("completed", "failed"):
            return job
    raise AssertionError(f"job {job_id} did not finish")


def status_of(client: httpx.Client, job_id: str) -> str:
    return client.get(f"/jobs/{job_id}").json()["data"]["status"]


def video_done(client: httpx.Client, job_id: str) -> dict:
    for _ in range(30):
        job = client.get(f"/videos/{job_id}", params={"wait": "true"}).json()["data"]
        if job["status"] in ("completed", "failed"):
            return job
    raise AssertionError("the video did not finish")
