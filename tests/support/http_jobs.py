"""Jobs through the HTTP API, as the tests drive them: create an image job, read its status,
long-poll an image or video job until it ends."""

from __future__ import annotations

import time

import httpx

# Hang guards, not timings: a 2K upscale or a clip on a machine loaded by a parallel suite (and
# whatever else runs there) takes many times its quiet duration; a job that never ends still
# fails the test within minutes.
IMAGE_JOB_SECONDS = 180
VIDEO_JOB_SECONDS = 360


def create(client: httpx.Client, prompt: str, **fields: object) -> dict:
    response = client.post("/images/generate", json={"prompt": prompt, **fields})
    assert response.status_code == 202, response.text
    return response.json()["data"]


def _long_polled(client: httpx.Client, path: str, seconds: float) -> dict | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job: dict = client.get(path, params={"wait": "true"}).json()["data"]
        if job["status"] in ("completed", "failed"):
            return job
    return None


def wait_done(client: httpx.Client, job_id: str) -> dict:
    job = _long_polled(client, f"/jobs/{job_id}", IMAGE_JOB_SECONDS)
    if job is None:
        raise AssertionError(f"job {job_id} did not finish")
    return job


def status_of(client: httpx.Client, job_id: str) -> str:
    return client.get(f"/jobs/{job_id}").json()["data"]["status"]


def video_done(client: httpx.Client, job_id: str) -> dict:
    job = _long_polled(client, f"/videos/{job_id}", VIDEO_JOB_SECONDS)
    if job is None:
        raise AssertionError("the video did not finish")
    return job
