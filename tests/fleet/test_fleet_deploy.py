"""deploy/ checked offline (no cluster, no Docker engine here): every rendered Kubernetes
manifest against the official schemas that `kubernetes-validate` bundles (KEDA's kinds against
the schemas in deploy/kubernetes/schemas), the wiring between them against the code (queues,
probe paths and ports, grace periods, the configuration file), and the compose file and the
Dockerfiles by structure."""

from __future__ import annotations

import importlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml

from core.broker import broker_queue
from core.jobs.contract import QUEUE_OF_OPERATION, QUEUES
from core.service_config import DEFAULTS as DEFAULT_CONFIG
from core.service_config import ServiceConfig, merge_tables
from models.install import register
from models.presets import BY_NAME
from models.registry import load_registry
from models.settings import ModelSettings
from pipelines.registry import DIFFUSION, PipelineRegistry
from tests.support.kustomize import render
from tests.support.service import REPO

DEPLOY = REPO / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
OVERLAYS = sorted(path for path in (KUBERNETES / "overlays").iterdir() if path.is_dir())
KUBERNETES_VERSION = "1.30.0"
KEDA_SCHEMAS = {
    "ScaledObject": KUBERNETES / "schemas" / "keda-scaledobject.json",
    "TriggerAuthentication": KUBERNETES / "schemas" / "keda-triggerauthentication.json",
}
GPU = "nvidia.com/gpu"
SHUTDOWN_DRAIN_SECONDS = 5


def by_kind(documents: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in documents if doc["kind"] == kind}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def service_config(documents: list[dict[str, Any]]) -> ServiceConfig:
    """The configuration file the ConfigMap mounts, as the service would load it."""
    text = by_kind(documents, "ConfigMap")["sfumato-config"]["data"]["config.toml"]
    merged = merge_tables(tomllib.loads(DEFAULT_CONFIG.read_text()), tomllib.loads(text))
    return ServiceConfig.model_validate(merged)


@pytest.fixture(scope="module", params=OVERLAYS, ids=[path.name for path in OVERLAYS])
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return render(request.param)


def test_there_are_overlays_for_gpu_and_cpu_clusters() -> None:
    assert {path.name for path in OVERLAYS} == {"production", "cpu-only"}


def test_every_manifest_validates_against_its_schema(rendered: list[dict[str, Any]]) -> None:
    kinds = set()
    for document in rendered:
        kinds.add(document["kind"])
        if document["apiVersion"].startswith("keda.sh/"):
            schema = json.loads(KEDA_SCHEMAS[document["kind"]].read_text())
            jsonschema.Draft202012Validator(schema).validate(document)
        else:
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    assert kinds == {
        "Namespace",
        "ConfigMap",
        "Secret",
        "Job",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "TriggerAuthentication",
        "ScaledObject",
        "PersistentVolumeClaim",
    }


def test_a_misspelt_field_fails_validation(rendered: list[dict[str, Any]]) -> None:
    """The validators are strict: the checks above can fail."""
    deployment = by_kind(rendered, "Deployment")["sfumato-gateway"]
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["replica"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)
    scaled = by_kind(rendered, "ScaledObject")["sfumato-worker-image"]
    broken = json.loads(json.dumps(scaled))
    broken["spec"]["triggers"][0]["metadata"]["listname"] = "typo"
    schema = json.loads(KEDA_SCHEMAS["ScaledObject"].read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)


def test_each_queue_has_a_worker_pool_scaled_on_its_own_redis_list(
    rendered: list[dict[str, Any]],
) -> None:
    deployments = by_kind(rendered, "Deployment")
    scaled = by_kind(rendered, "ScaledObject")
    environment = by_kind(rendered, "ConfigMap")["sfumato-env"]["data"]
    for queue in QUEUES:
        name = f"sfumato-worker-{queue}"
        worker = container(deployments[name])
        assert worker["args"] == ["--queue", queue]
        assert "replicas" not in deployments[name]["spec"], "KEDA owns the replicas"
        scaler = scaled[name]
        assert scaler["spec"]["scaleTargetRef"]["name"] == name
        (trigger,) = scaler["spec"]["triggers"]
        assert trigger["type"] == "redis"
        namespace = environment["SFUMATO_NAMESPACE"]
        assert trigger["metadata"]["listName"] == broker_queue(namespace, queue)
        assert trigger["metadata"]["addressFromEnv"] in environment
        assert trigger["authenticationRef"]["name"] in by_kind(rendered, "TriggerAuthentication")


def test_probes_point_at_the_health_endpoints(rendered: list[dict[str, Any]]) -> None:
    deployments = by_kind(rendered, "Deployment")
    gateway = container(deployments["sfumato-gateway"])
    assert "--no-workers" in gateway["args"]
    port = int(gateway["args"][gateway["args"].index("--port") + 1])
    metrics_port = int(gateway["args"][gateway["args"].index("--metrics-port") + 1])
    assert metrics_port != port
    assert gateway["ports"] == [
        {"name": "http", "containerPort": port},
        {"name": "metrics", "containerPort": metrics_port},
    ]
    # Prometheus scrapes the metrics port; the Service exposes only the API (issue 19).
    pod = deployments["sfumato-gateway"]["spec"]["template"]["metadata"]
    assert pod["annotations"]["prometheus.io/port"] == str(metrics_port)
    services = by_kind(rendered, "Service")
    assert [entry["targetPort"] for entry in services["sfumato-gateway"]["spec"]["ports"]] == [
        "http"
    ]
    # Absolute URLs from configuration, never from a request's Host header (issue 22).
    environment = by_kind(rendered, "ConfigMap")["sfumato-env"]["data"]
    assert environment["SFUMATO_PUBLIC_URL"].startswith("https://")
    assert environment["SFUMATO_FILES_URL"].startswith("https://")
    assert environment["SFUMATO_FILES_URL"] != environment["SFUMATO_PUBLIC_URL"]
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/healthz"
    dockerfile = (DEPLOY / "docker" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["sfumato", "worker", "--metrics-port", "9100"]' in dockerfile
    for queue in QUEUES:
        worker = container(deployments[f"sfumato-worker-{queue}"])
        assert worker["ports"] == [{"name": "probes", "containerPort": 9100}]
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            assert worker[probe]["httpGet"] == {"path": path, "port": "probes"}


def test_grace_periods_cover_the_workers_shutdown(rendered: list[dict[str, Any]]) -> None:
    config = service_config(rendered)
    deployments = by_kind(rendered, "Deployment")
    for queue in QUEUES:
        pod = deployments[f"sfumato-worker-{queue}"]["spec"]["template"]["spec"]
        grace = config.queues.of(queue).shutdown_grace_seconds
        assert pod["terminationGracePeriodSeconds"] > grace + SHUTDOWN_DRAIN_SECONDS


def test_gpu_pools_ask_for_gpus_only_on_the_gpu_cluster(rendered: list[dict[str, Any]]) -> None:
    deployments = by_kind(rendered, "Deployment")
    namespace = next(d["metadata"]["name"] for d in rendered if d["kind"] == "Namespace")
    gpu_cluster = namespace == "sfumato"
    for queue in QUEUES:
        deployment = deployments[f"sfumato-worker-{queue}"]
        pod = deployment["spec"]["template"]["spec"]
        resources = container(deployment)["resources"]
        wants_gpu = gpu_cluster and queue in ("image", "video")
        assert (GPU in resources["limits"]) is wants_gpu, queue
        assert (GPU in resources["requests"]) is wants_gpu, queue
        assert ("nodeSelector" in pod) is wants_gpu, queue
        image = container(deployment)["image"]
        assert ("worker-gpu" in image) is wants_gpu, image
        assert re.fullmatch(r"registry\.example\.com/sfumato/worker-(cpu|gpu):[\w.]+", image)
    for document in rendered:
        if document["kind"] != "Namespace":
            assert document["metadata"]["namespace"] == namespace


def test_gpu_pools_run_the_diffusion_pipelines_of_the_models_the_job_pulls(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    """On the GPU cluster the pull Job's presets cover every operation of the image and video
    queues, their registry validates with every folder on the models volume the Job writes and
    the pools mount read-only, and a worker reading it serves each operation with a diffusion
    pipeline that exists (no SFUMATO_PIPELINES anywhere); the CPU cluster pulls SD-Turbo for
    the image pool's generate and keeps the builtin pipelines for the rest."""
    deployments = by_kind(rendered, "Deployment")
    namespace = next(d["metadata"]["name"] for d in rendered if d["kind"] == "Namespace")
    gpu_cluster = namespace == "sfumato"
    job = by_kind(rendered, "Job")["sfumato-models-pull"]["spec"]["template"]["spec"]
    (pull,) = job["containers"]
    assert pull["command"] == ["sfumato", "models", "pull"]
    presets, directory = pull["args"][:-2], pull["args"][-1]
    assert pull["args"][-2] == "--dir"
    job_mounts = {mount["name"]: mount["mountPath"] for mount in pull["volumeMounts"]}
    assert directory == job_mounts["models"]
    claim = {v["name"]: v for v in job["volumes"]}["models"]["persistentVolumeClaim"]
    assert "readOnly" not in claim, "the Job writes the volume"
    # The registry the Job's pull writes, at the place the volume appears in this test.
    models_dir = tmp_path / "models"
    registry = models_dir / "models.toml"
    for name in presets:
        register(registry, BY_NAME[name])
    load_registry(registry)
    pipelines = PipelineRegistry(models=ModelSettings(models_dir=models_dir))
    for queue in ("image", "video"):
        deployment = deployments[f"sfumato-worker-{queue}"]
        worker = container(deployment)
        environment = {item["name"]: item["value"] for item in worker.get("env", [])}
        assert "SFUMATO_PIPELINES" not in environment and "SFUMATO_MODELS_FILE" not in environment
        served = {op for op, served_by in QUEUE_OF_OPERATION.items() if served_by == queue}
        mounts = {mount["name"]: mount for mount in worker["volumeMounts"]}
        volume = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        on_volume = "persistentVolumeClaim" in volume["models"]
        if on_volume:
            assert volume["models"]["persistentVolumeClaim"]["claimName"] == claim["claimName"]
            assert volume["models"]["persistentVolumeClaim"]["readOnly"] is True
            assert environment["SFUMATO_MODELS_DIR"] == mounts["models"]["mountPath"]
            # The folders the Job's registry names (relative to it) are where the pool looks.
            assert environment["SFUMATO_MODELS_DIR"] == directory
        diffusion = {op for op in served if pipelines.target(op) == DIFFUSION[op]}
        if gpu_cluster:
            assert on_volume and diffusion == served, queue
        else:
            assert diffusion == ({"generate"} if queue == "image" else set()), queue
            assert not on_volume or queue == "image"
        for operation in diffusion:
            module_name, _, class_name = DIFFUSION[operation].partition(":")
            assert hasattr(importlib.import_module(module_name), class_name), operation


def test_every_process_reads_the_same_configuration_and_secrets(
    rendered: list[dict[str, Any]],
) -> None:
    secrets = by_kind(rendered, "Secret")["sfumato-secrets"]["stringData"]
    assert {"SFUMATO_DATABASE_URL", "SFUMATO_BROKER_URL", "SFUMATO_SECRET_KEY"} <= set(secrets)
    environment = by_kind(rendered, "ConfigMap")["sfumato-env"]["data"]
    assert environment["SFUMATO_CONFIG_FILE"] == "/etc/sfumato/config.toml"
    pods = [
        *(d["spec"]["template"]["spec"] for d in by_kind(rendered, "Deployment").values()),
        by_kind(rendered, "Job")["sfumato-migrate"]["spec"]["template"]["spec"],
    ]
    for pod in pods:
        (main,) = pod["containers"]
        sources = [next(iter(source.values()))["name"] for source in main["envFrom"]]
        assert sources == ["sfumato-env", "sfumato-secrets"]
        mounts = {mount["mountPath"]: mount["name"] for mount in main["volumeMounts"]}
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert volumes[mounts["/etc/sfumato"]]["configMap"]["name"] == "sfumato-config"
    job = by_kind(rendered, "Job")["sfumato-migrate"]["spec"]["template"]["spec"]
    assert job["containers"][0]["command"] == ["sfumato", "migrate"]


def test_the_compose_file_runs_every_queue_on_shared_services() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "seaweedfs", "bucket", "migrate", "gateway"} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
    workers = {name: service for name, service in services.items() if name.startswith("worker-")}
    assert sorted(service["command"][1] for service in workers.values()) == sorted(QUEUES)
    gateway = services["gateway"]
    assert "--no-workers" in gateway["command"] and gateway["ports"] == ["8000:8000"]
    assert "--metrics-port" in gateway["command"], "metrics off the published port"
    for service in [gateway, *workers.values()]:
        environment = service["environment"]
        assert environment["SFUMATO_BROKER_URL"].startswith("redis://redis:")
        assert environment["SFUMATO_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert environment["SFUMATO_STORAGE_URL"].startswith("s3://")
        assert "/readyz" in " ".join(service["healthcheck"]["test"])
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    stop_grace = int(next(iter(workers.values()))["stop_grace_period"].removesuffix("s"))
    defaults = ServiceConfig.model_validate(tomllib.loads(DEFAULT_CONFIG.read_text()))
    longest = max(defaults.queues.of(queue).shutdown_grace_seconds for queue in QUEUES)
    assert stop_grace >= longest + SHUTDOWN_DRAIN_SECONDS


# The compose specification's JSON schema, vendored from compose-spec/compose-spec
# (schema/compose-spec.json, Apache-2.0) so the check runs offline.
COMPOSE_SCHEMA = DEPLOY / "schemas" / "compose-spec.json"
# Images withdrawn from public registries: `docker compose up` would fail before anything ran.
WITHDRAWN_IMAGES = ("minio/minio", "minio/mc", "bitnami/minio")


def test_the_compose_file_is_valid_and_pulls_only_public_maintained_images() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text())).validate(compose)
    built = {service["image"] for service in compose["services"].values() if "build" in service}
    for name, service in compose["services"].items():
        image = service["image"]
        assert not image.startswith(WITHDRAWN_IMAGES), (name, image)
        assert image in built or "/" not in image or image.startswith("chrislusf/"), image
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), (name, source)


def test_compose_presigns_urls_for_the_port_its_s3_store_publishes_on_the_host() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    storage = urlsplit(services["gateway"]["environment"]["SFUMATO_STORAGE_URL"])
    options = dict(parse_qsl(storage.query))
    inside, public = urlsplit(options["endpoint"]), urlsplit(options["public_endpoint"])
    store = services[inside.hostname]
    assert f"{public.port}:{inside.port}" in store["ports"]
    assert public.hostname in ("127.0.0.1", "localhost")
    assert str(inside.port) in " ".join(store["healthcheck"]["test"])
    # The bucket exists before any service uses it, and the store knows the services' keys.
    bucket = services["bucket"]
    assert storage.netloc in " ".join(bucket["command"])
    assert bucket["depends_on"][inside.hostname]["condition"] == "service_healthy"
    for name in ("gateway", "worker-image", "worker-video", "worker-style"):
        assert services[name]["depends_on"]["bucket"]["condition"] == (
            "service_completed_successfully"
        )
    environment = services["gateway"]["environment"]
    identities = json.loads((DEPLOY / "seaweedfs" / "s3.json").read_text())["identities"]
    assert {
        "accessKey": environment["AWS_ACCESS_KEY_ID"],
        "secretKey": environment["AWS_SECRET_ACCESS_KEY"],
    } in [credential for identity in identities for credential in identity["credentials"]]


def test_the_dockerfiles_build_the_gateway_and_both_workers() -> None:
    cpu = (DEPLOY / "docker" / "Dockerfile").read_text()
    gpu = (DEPLOY / "docker" / "Dockerfile.gpu").read_text()
    stages = re.findall(r"^FROM \S+ AS (\S+)$", cpu, re.MULTILINE)
    assert {"gateway", "worker"} <= set(stages)
    assert re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:\S+runtime\S*$", gpu, re.MULTILINE)
    assert 'pip install ".[diffusion]"' in gpu
    for text in (cpu, gpu):
        assert "USER 10001" in text
        for copied in ("sfumato", "core", "gateway", "workers", "pipelines", "models"):
            assert f"COPY {copied} {copied}" in text
