"""`stack`: the fleet in containers (deploy/compose.yaml with compose.local.yaml and the stack
test's override; the images `make stack-test` builds): the time from `compose up` to the first
completed job, the images' sizes, and the time per image job through the containers against the
same jobs through processes on this host."""

from __future__ import annotations

import statistics
import time

import httpx

from benchmarks.containers import API_PORT, ComposeStack
from benchmarks.harness import Options, deployment
from benchmarks.report import Section, Table, ms

PROMPTS = (
    "a red bicycle against a brick wall",
    "a lighthouse on a cliff at dusk",
    "a paper boat on a pond",
    "a cup of coffee on a wooden table",
)
METHOD = """
From fresh volumes, `compose up -d` of deploy/compose.yaml + compose.local.yaml +
tests/stack/compose.test.yaml (images already built): the time until the gateway's health check
passes, and until the first image job (1K generate, builtin pipeline, created with the key `sfumato
demo` printed inside the gateway container) is completed. Then the same sequence of 1K generate
jobs, one at a time (create, then long-poll until completed, timed by the client), through the
containerized stack's published port, and through processes on this host (`sfumato serve
--no-workers` and one `sfumato worker --queue image`, host PostgreSQL and Redis, the builtin
pipelines): the median per job of each, and their ratio (the container overhead). Image sizes as
the engine reports them (uncompressed). On a 2-core machine shared with other sessions: the
ratio is the figure to read, the absolute times move with the load.
"""


def timed_jobs(client: httpx.Client, count: int) -> list[float]:
    times = []
    for index in range(count):
        started = time.monotonic()
        created = client.post(
            "/images/generate", json={"prompt": PROMPTS[index % len(PROMPTS)], "resolution": "1K"}
        )
        if created.status_code != 202:
            raise RuntimeError(f"create answered {created.status_code}: {created.text[:300]}")
        job_id = created.json()["data"]["id"]
        while True:
            job = client.get(f"/jobs/{job_id}", params={"wait": "true"}).json()["data"]
            if job["status"] in ("completed", "failed"):
                break
        if job["status"] != "completed":
            raise RuntimeError(f"job {job_id} failed: {job.get('error')}")
        times.append(time.monotonic() - started)
    return times


def run(options: Options) -> Section:
    count = options.scaled(10, 3)
    env_file = options.work_dir / "stack.env"
    ComposeStack.write_env(env_file)
    stack = ComposeStack(env_file)
    stack.down(volumes=True)
    try:
        started = time.monotonic()
        stack.compose("up", "-d", "--no-build")
        stack.wait_healthy(["gateway"])
        healthy = time.monotonic() - started
        key = stack.demo_key()
        with httpx.Client(
            base_url=f"http://127.0.0.1:{API_PORT}/v1", headers={"x-api-key": key}, timeout=70
        ) as client:
            timed_jobs(client, 1)
            first_job = time.monotonic() - started
            in_containers = timed_jobs(client, count)
        sizes = stack.image_sizes()
    finally:
        stack.down(volumes=True)
    with deployment(
        "distributed", options.work_dir / "processes", {"SFUMATO_PIPELINES": ""}
    ) as processes:
        key = processes.new_key()
        with httpx.Client(
            base_url=f"http://127.0.0.1:{processes.port}/v1",
            headers={"x-api-key": key},
            timeout=70,
        ) as client:
            timed_jobs(client, 1)  # the worker's first job loads its pipeline, as above
            as_processes = timed_jobs(client, count)

    start = Table(["from `compose up -d`", "seconds"])
    start.add("gateway healthy", f"{healthy:.1f}")
    start.add("first job completed", f"{first_job:.1f}")
    images = Table(["image", "size"])
    for name, size in sorted(sizes.items()):
        images.add(f"`{name}`", f"{size / 1e6:,.0f} MB")
    per_job = Table(["1K generate, one at a time", "median", "min", "max"])
    for label, times in (("containers", in_containers), ("processes on the host", as_processes)):
        per_job.add(label, ms(statistics.median(times)), ms(min(times)), ms(max(times)))
    ratio = statistics.median(in_containers) / statistics.median(as_processes)
    return Section(
        "stack",
        METHOD,
        [start, images, per_job],
        [
            f"From `compose up` to the first completed job: {first_job:.0f} s (gateway healthy"
            f" at {healthy:.0f} s).",
            f"Container overhead per job: {ratio:.2f}x the processes' median ({count} jobs each).",
        ],
    )
