"""The distributed stack in containers, built and run for real (issue 32): the project's own
compose files (deploy/compose.yaml, compose.local.yaml: Debian-built PostgreSQL, Redis and S3
store, host networking on 127.0.0.1) bring up PostgreSQL, Redis, the store, the migrations job,
a gateway and a worker per queue, and every request goes through the published gateway port.
The tests run in order on one stack: jobs of every kind, a killed worker, down and up, a second
gateway replica behind a round-robin, and the stop of every container. Run by `make stack-test`
(tests/stack/run.sh builds the images first)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from benchmarks.containers import (
    API_PORT,
    LONG_RUNNING,
    PROJECT,
    SECOND_API_PORT,
    SECOND_METRICS_PORT,
    ComposeStack,
)
from benchmarks.testkit.sites import site_server
from tests.support.http_jobs import create, video_done, wait_done
from tests.support.styles_api import extract

# Bounds for a loaded two-core machine: bringing the stack up and down happens inside a test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
API = f"http://127.0.0.1:{API_PORT}/v1"
SECOND_GATEWAY = f"{PROJECT}-gateway-2"
# Jobs that a killed worker had: enough large ones that one is surely running when it dies.
KILLED_JOBS = 3
SIGKILLED = 137
# The gateway's writable places on its read-only root (deploy/compose.yaml's tmpfs).
WRITABLE = ("/tmp", "/var/lib/sfumato")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeStack]:
    env_file = tmp_path_factory.mktemp("stack") / "stack.env"
    ComposeStack.write_env(env_file)
    stack = ComposeStack(env_file)
    stack.down(volumes=True)  # what an interrupted earlier run left
    try:
        stack.up()
        yield stack
    finally:
        # The containers' logs outlive them, for a failure's post-mortem.
        logs = env_file.with_name("stack.log")
        logs.write_text(stack.compose("logs", "--no-color", "--timestamps"))
        print(f"stack logs: {logs}")
        subprocess_quiet(["docker", "rm", "-f", SECOND_GATEWAY])
        stack.down(volumes=True)


def subprocess_quiet(command: list[str]) -> None:
    subprocess.run(command, capture_output=True, check=False)


@pytest.fixture(scope="module")
def key(stack: ComposeStack) -> str:
    return stack.demo_key()


@pytest.fixture(scope="module")
def client(key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=API, headers={"x-api-key": key}, timeout=70) as client:
        yield client


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with site_server() as url:
        yield url


def digest_of(url: str) -> str:
    """Downloads a file through the URL the API gave (presigned for the store's loopback port)."""
    response = httpx.get(url, timeout=60)
    assert response.status_code == 200, (url, response.status_code)
    assert response.content
    return hashlib.sha256(response.content).hexdigest()


def credits_of(client: httpx.Client) -> int:
    return int(client.get("/account").json()["data"]["credits"])


def jobs_of(client: httpx.Client) -> list[dict]:
    """The account's image and video jobs (one page each holds them all here)."""
    jobs = []
    for kind in ("image.generate", "image.edit", "video.generate"):
        page = client.get("/jobs", params={"limit": 50, "type": kind})
        assert page.status_code == 200, page.text
        jobs += page.json()["data"]
    return jobs


def files_of(client: httpx.Client) -> dict[str, str]:
    """Every file of the account's completed jobs, as job id / file -> its bytes' digest."""
    files = {}
    for job in jobs_of(client):
        result = job.get("result") or {}
        for index, image in enumerate(result.get("images", [])):
            files[f"{job['id']}/{index}"] = digest_of(image["url"])
        if "video" in result:
            files[f"{job['id']}/video"] = digest_of(result["video"]["url"])
    return files


def test_the_demo_key_runs_every_kind_of_job_through_the_published_port(
    client: httpx.Client, site: str
) -> None:
    generated = wait_done(client, create(client, "a red bicycle against a brick wall")["id"])
    assert generated["status"] == "completed", generated
    image = generated["result"]["images"][0]
    assert httpx.get(image["url"], timeout=60).content.startswith(b"\x89PNG")

    upscale = client.post("/images/upscale", json={"imageId": generated["id"], "resolution": "2K"})
    assert upscale.status_code == 202, upscale.text
    upscaled = wait_done(client, upscale.json()["data"]["id"])
    assert upscaled["status"] == "completed", upscaled
    digest_of(upscaled["result"]["images"][0]["url"])

    video = client.post(
        "/videos/image-to-video",
        json={
            "image": generated["id"],
            "prompt": "slow dolly in",
            "duration": 1,
            "resolution": "480p",
        },
    )
    assert video.status_code == 202, video.text
    clip = video_done(client, video.json()["data"]["id"])
    assert clip["status"] == "completed", clip
    assert httpx.get(clip["result"]["video"]["url"], timeout=60).content[4:8] == b"ftyp"

    extraction = extract(client, f"{site}/aurora/")
    assert extraction["status"] == "completed", extraction.get("error")
    style = client.get(f"/styles/{extraction['result']['style']['id']}")
    assert style.status_code == 200, style.text


def test_a_killed_image_worker_loses_nothing_and_charges_once(
    stack: ComposeStack, client: httpx.Client
) -> None:
    before = credits_of(client)
    jobs = [
        create(client, f"a lighthouse on a cliff at dusk, {n}", resolution="4K")["id"]
        for n in range(KILLED_JOBS)
    ]
    charged = before - credits_of(client)
    assert charged > 0
    worker = stack.container("worker-image")
    wait_running(client, jobs[0])
    started_before = stack.inspect(worker)["State"]["StartedAt"]
    stack_kill(worker)
    # SIGKILL: the worker hands nothing back. Docker counts `docker kill` as a manual stop, which
    # its restart policy leaves alone, so the test starts it as an operator (or an orchestrator)
    # would; its jobs come back when their leases end.
    stack.compose("start", "worker-image")
    stack.wait_healthy(["worker-image"])
    assert stack.container("worker-image") == worker
    assert stack.inspect(worker)["State"]["StartedAt"] != started_before
    for job in jobs:
        assert wait_done(client, job)["status"] == "completed"
    assert before - credits_of(client) == charged, "a job was charged twice or refunded"


def wait_running(client: httpx.Client, job_id: str) -> None:
    """Until the job's event stream says it runs (the stream pushes each change)."""
    with client.stream("GET", f"/jobs/{job_id}/events") as events:
        for line in events.iter_lines():
            if line.startswith("data:"):
                status = json.loads(line.removeprefix("data:"))["data"]["status"]
                assert status in ("pending", "processing"), f"it ended before the kill: {status}"
                if status == "processing":
                    return
    raise AssertionError("the event stream ended before the job ran")


def stack_kill(container: str) -> None:
    subprocess.run(["docker", "kill", container], check=True, capture_output=True)


def test_down_then_up_keeps_every_job_file_and_balance(
    stack: ComposeStack, client: httpx.Client
) -> None:
    jobs = {job["id"]: job["status"] for job in jobs_of(client)}
    files, credits = files_of(client), credits_of(client)
    assert files
    stack.down()
    stack.up()
    assert {job["id"]: job["status"] for job in jobs_of(client)} == jobs
    assert files_of(client) == files
    assert credits_of(client) == credits


class RoundRobin:
    """A loopback TCP proxy that hands each new connection to the next backend in turn, and
    records which backend each connection reached."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.served: list[int] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            port = self.ports[len(self.served) % len(self.ports)]
            self.served.append(port)
            upstream = socket.create_connection(("127.0.0.1", port))
            for source, target in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def test_two_gateway_replicas_behind_a_round_robin_answer_long_polls_across_replicas(
    stack: ComposeStack, key: str
) -> None:
    # A second replica of the gateway: the first's image, settings and restrictions, on ports of
    # its own (two containers on the host's network cannot share one, so neither `--scale` nor
    # Compose v1's `run`, which adds links that host networking refuses, can make it).
    first = stack.inspect(stack.container("gateway"))
    subprocess.run(
        [
            "docker", "run", "-d", "--name", SECOND_GATEWAY, "--network", "host",
            "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges:true",
            *(f"--tmpfs={path}:uid=10001,gid=10001,mode=0700" for path in WRITABLE),
            *(arg for variable in first["Config"]["Env"] for arg in ("-e", variable)),
            first["Config"]["Image"],
            "sfumato", "serve", "--no-workers", "--host", "127.0.0.1",
            "--port", str(SECOND_API_PORT), "--metrics-port", str(SECOND_METRICS_PORT),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not ready(SECOND_API_PORT):
        assert time.monotonic() < deadline, "the second replica never became ready"
        time.sleep(0.5)
    proxy = RoundRobin([API_PORT, SECOND_API_PORT])
    # One connection per request, so that consecutive requests alternate between replicas.
    limits = httpx.Limits(max_keepalive_connections=0)
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{proxy.port}/v1",
            headers={"x-api-key": key},
            timeout=70,
            limits=limits,
        ) as balanced:
            for _ in range(3):
                created = create(balanced, "a paper boat on a pond")
                started = time.monotonic()
                held = balanced.get(f"/jobs/{created['id']}", params={"wait": "true"})
                # Answered on completion, not at the 55 s limit: the worker's wake-up reached
                # the replica holding the request.
                assert held.json()["data"]["status"] == "completed"
                assert time.monotonic() - started < 50
            create_ports, poll_ports = proxy.served[0::2], proxy.served[1::2]
            assert all(a != b for a, b in zip(create_ports, poll_ports, strict=True))
            assert set(proxy.served) == {API_PORT, SECOND_API_PORT}
    finally:
        proxy.close()


def ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_images_run_unprivileged_with_their_labels(stack: ComposeStack) -> None:
    for service in ("gateway", "worker-image"):
        config = stack.inspect(stack.container(service))["Config"]
        assert config["User"] == "10001"
        assert "MALLOC_ARENA_MAX=2" in config["Env"]
        assert config["Healthcheck"]["Test"]
        labels = config["Labels"]
        assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
        assert labels["org.opencontainers.image.version"]


def test_every_container_stops_within_its_grace_period_on_sigterm(stack: ComposeStack) -> None:
    containers = {service: stack.container(service) for service in LONG_RUNNING}
    containers["gateway-2"] = SECOND_GATEWAY
    # Compose sends each its stop signal and waits its stop_grace_period before a SIGKILL.
    stack.compose("stop")
    subprocess_quiet(["docker", "stop", "--time", "15", SECOND_GATEWAY])
    for service, container in containers.items():
        state = stack.inspect(container)["State"]
        assert not state["Running"], service
        assert state["ExitCode"] != SIGKILLED and not state["OOMKilled"], (service, state)
