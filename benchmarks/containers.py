"""The containerized stack, driven from the host: deploy/compose.yaml with compose.local.yaml
(Debian-built services, host networking, loopback ports) and tests/stack/compose.test.yaml, under
a project name of its own and a fresh environment file of secrets. Used by the stack test
(tests/stack) and `python -m benchmarks stack`; the images must exist (tests/stack/run.sh, or
`make images` with the local services)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from benchmarks.testkit.processes import REPO

COMPOSE_FILES = (
    REPO / "deploy" / "compose.yaml",
    REPO / "deploy" / "compose.local.yaml",
    REPO / "tests" / "stack" / "compose.test.yaml",
)
PROJECT = "sfumato-stack-test"
API_PORT = 18000
# The second gateway replica's ports (the first's are compose.local.yaml's 18000 and 19100).
SECOND_API_PORT = 18001
SECOND_METRICS_PORT = 19104
APP_SERVICES = ("gateway", "worker-image", "worker-video", "worker-style")
LONG_RUNNING = ("postgres", "redis", "seaweedfs", *APP_SERVICES)
# Hang guard for a stack coming up on a loaded two-core machine (workers load their models).
HEALTHY_SECONDS = 300


def compose_command() -> list[str]:
    """Compose v2 (`docker compose`) where the CLI has it, else v1 (`docker-compose`)."""
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if probe.returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise RuntimeError("neither `docker compose` nor `docker-compose` is installed")


def host_network_config(text: str) -> dict:
    """The merged configuration (`compose config`), without the published ports of services on
    the host's network: the engine discards those anyway, but Compose v1 refuses them, and an
    override cannot remove a base file's list entries there (v2's `!reset` is not v1 YAML)."""
    config = dict(yaml.safe_load(text))
    for service in config["services"].values():
        if service.get("network_mode") == "host":
            service.pop("ports", None)
    return config


def _run(command: list[str], timeout: float = 600) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[-3:])}: {done.stdout}\n{done.stderr}")
    return done.stdout


class ComposeStack:
    def __init__(self, env_file: Path) -> None:
        self.env_file = env_file
        compose = [*compose_command(), "--project-name", PROJECT, "--env-file", str(env_file)]
        files = [arg for path in COMPOSE_FILES for arg in ("-f", str(path))]
        rendered = env_file.with_name("compose.rendered.yaml")
        rendered.write_text(yaml.safe_dump(host_network_config(_run([*compose, *files, "config"]))))
        rendered.chmod(0o600)  # it holds the environment file's secrets
        self.base = [*compose, "-f", str(rendered)]

    @staticmethod
    def write_env(env_file: Path) -> None:
        """Fresh secrets (deploy/make-env.py) for this stack only."""
        made = subprocess.run(
            ["python3", str(REPO / "deploy" / "make-env.py")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        env_file.write_text(re.sub(r"(?m)^COMPOSE_PROJECT_NAME=.*$", "", made))
        env_file.chmod(0o600)

    def compose(self, *args: str, timeout: float = 600) -> str:
        return _run([*self.base, *args], timeout)

    def up(self) -> None:
        # Compose waits for each dependency's condition (healthy, completed) before starting
        # what depends on it; the images were built beforehand.
        self.compose("up", "-d", "--no-build")
        self.wait_healthy(LONG_RUNNING)

    def down(self, volumes: bool = False) -> None:
        self.compose("down", *(["--volumes"] if volumes else []), "--remove-orphans")

    def container(self, service: str) -> str:
        ids = self.compose("ps", "-q", service).split()
        if len(ids) != 1:
            raise RuntimeError(f"{service}: {len(ids)} containers")
        return ids[0]

    def inspect(self, container: str) -> dict:
        out = subprocess.run(
            ["docker", "inspect", container], capture_output=True, text=True, check=True
        ).stdout
        return dict(json.loads(out)[0])

    def health(self, service: str) -> str:
        state = self.inspect(self.container(service))["State"]
        return str(state.get("Health", {}).get("Status", state["Status"]))

    def wait_healthy(self, services: Sequence[str], seconds: float = HEALTHY_SECONDS) -> None:
        """Polls the engine's health checks (the images' and compose's) until all pass."""
        deadline = time.monotonic() + seconds
        waiting = list(services)
        while waiting:
            waiting = [service for service in waiting if self.health(service) != "healthy"]
            if waiting and time.monotonic() > deadline:
                logs = self.compose("logs", "--tail", "40", *waiting)
                raise AssertionError(f"not healthy after {seconds} s: {waiting}\n{logs}")
            time.sleep(0.5)

    def exec(self, service: str, *command: str) -> str:
        done = subprocess.run(
            ["docker", "exec", self.container(service), *command],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    def demo_key(self) -> str:
        """`sfumato demo` inside the gateway container: the key it prints."""
        printed = self.exec(
            "gateway", "sfumato", "demo", "--base-url", f"http://127.0.0.1:{API_PORT}"
        )
        match = re.search(r"Demo API key [^\n]*:\n\n\s+(\S+)", printed)
        if match is None:
            raise AssertionError(f"no key in the demo's output:\n{printed}")
        return match.group(1)

    def image_sizes(self) -> dict[str, int]:
        """Bytes of each image the stack runs, by name."""
        sizes = {}
        for line in self.compose("config").splitlines():
            image = line.strip().removeprefix("image:").strip()
            if line.strip().startswith("image:") and image not in sizes:
                out = subprocess.run(
                    ["docker", "image", "inspect", "--format", "{{.Size}}", image],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                sizes[image] = int(out)
        return sizes
