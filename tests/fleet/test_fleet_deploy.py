"""deploy/ checked offline (no cluster, no Docker engine here): every rendered Kubernetes
manifest against the official schemas that `kubernetes-validate` bundles (KEDA's kinds against
the schemas in deploy/kubernetes/schemas), the wiring between them against the code (queues,
probe paths and ports, grace periods, the configuration file), and the compose file and the
Dockerfiles by structure."""

from __future__ import annotations

import importlib
import ipaddress
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml

from benchmarks.testkit.processes import REPO
from core.broker import broker_queue
from core.jobs.contract import QUEUE_OF_OPERATION, QUEUES
from core.service_config import DEFAULTS as DEFAULT_CONFIG
from core.service_config import ServiceConfig, merge_tables
from core.settings import secret_weakness
from models.install import register
from models.presets import BY_NAME
from models.registry import load_registry
from models.settings import ModelSettings
from pipelines.registry import DIFFUSION, PipelineRegistry
from tests.support.kustomize import render

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
        "Job",
        "NetworkPolicy",
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
        assert re.fullmatch(r"ghcr\.io/sfumato/sfumato-worker-(cpu|gpu):[\w.]+", image)
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


def secret_keys() -> set[str]:
    """The keys of sfumato-secrets, as base/secrets.example.env names them."""
    lines = (KUBERNETES / "base" / "secrets.example.env").read_text().splitlines()
    return {line.split("=", 1)[0] for line in lines if line and not line.startswith("#")}


def test_every_process_reads_the_same_configuration_and_secrets(
    rendered: list[dict[str, Any]],
) -> None:
    # The Secret is the operator's to create: no placeholder Secret is ever applied (issue 31).
    assert "Secret" not in {document["kind"] for document in rendered}
    assert {"SFUMATO_DATABASE_URL", "SFUMATO_BROKER_URL", "SFUMATO_SECRET_KEY"} <= secret_keys()
    environment = by_kind(rendered, "ConfigMap")["sfumato-env"]["data"]
    assert environment["SFUMATO_CONFIG_FILE"] == "/etc/sfumato/config.toml"
    for pod in pods(rendered):
        (main,) = pod["containers"]
        sources = [next(iter(source.values()))["name"] for source in main["envFrom"]]
        assert sources == ["sfumato-env", "sfumato-secrets"]
        mounts = {mount["mountPath"]: mount["name"] for mount in main["volumeMounts"]}
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert volumes[mounts["/etc/sfumato"]]["configMap"]["name"] == "sfumato-config"
    job = by_kind(rendered, "Job")["sfumato-migrate"]["spec"]["template"]["spec"]
    assert job["containers"][0]["command"] == ["sfumato", "migrate"]


def pods(documents: list[dict[str, Any]], with_models_job: bool = False) -> list[dict[str, Any]]:
    """The pod specs of the Deployments and the migrations Job (and the models Job)."""
    jobs = by_kind(documents, "Job")
    return [
        *(d["spec"]["template"]["spec"] for d in by_kind(documents, "Deployment").values()),
        jobs["sfumato-migrate"]["spec"]["template"]["spec"],
        *([jobs["sfumato-models-pull"]["spec"]["template"]["spec"]] if with_models_job else []),
    ]


def test_every_pod_runs_restricted_on_a_read_only_root(rendered: list[dict[str, Any]]) -> None:
    dockerfile = (DEPLOY / "docker" / "Dockerfile").read_text()
    # The image's writable places: its data folder and HOME (caches), both mounted volumes.
    writable = {
        re.search(rf"{name}=(\S+)", dockerfile).group(1)  # type: ignore[union-attr]
        for name in ("SFUMATO_DATA_DIR", "HOME")
    }
    assert writable == {"/var/lib/sfumato", "/tmp"}
    for pod in pods(rendered, with_models_job=True):
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for main in pod["containers"]:
            context = main["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"] == {"drop": ["ALL"]}
            mounts = {mount["mountPath"]: mount["name"] for mount in main["volumeMounts"]}
            assert "emptyDir" in volumes[mounts["/tmp"]]
            if main["name"] != "pull":
                assert writable <= set(mounts)


def test_the_dashboard_cookie_is_secure_and_only_the_proxies_forwarded_headers_count(
    rendered: list[dict[str, Any]],
) -> None:
    environment = by_kind(rendered, "ConfigMap")["sfumato-env"]["data"]
    assert environment["SFUMATO_COOKIE_SECURE"] == "always"
    for proxy in environment["SFUMATO_TRUSTED_PROXIES"].split(","):
        assert ipaddress.ip_network(proxy.strip()).is_private


def allowed(rule: dict[str, Any], address: str) -> bool:
    """Whether an egress rule's ipBlocks let `address` through."""
    ip = ipaddress.ip_address(address)
    for peer in rule["to"]:
        block = peer.get("ipBlock")
        if block is None:
            continue
        network = ipaddress.ip_network(block["cidr"])
        if ip.version == network.version and ip in network:
            excepted = [ipaddress.ip_network(cidr) for cidr in block.get("except", [])]
            if not any(ip in net for net in excepted if net.version == ip.version):
                return True
    return False


def test_the_style_pool_may_reach_the_public_internet_and_no_private_address(
    rendered: list[dict[str, Any]],
) -> None:
    policies = by_kind(rendered, "NetworkPolicy")
    policy = policies["sfumato-worker-style-egress"]["spec"]
    assert policy["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "sfumato-worker-style"
    }
    assert policy["policyTypes"] == ["Egress"]
    rules = policy["egress"]
    # Every rule names its peers: none lets everything through.
    assert all(rule.get("to") for rule in rules)
    for address in ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"):
        assert any(allowed(rule, address) for rule in rules), address
    for address in (
        "169.254.169.254",  # the cloud's metadata service
        "fd00:ec2::254",
        "10.96.0.1",  # a cluster's service range
        "172.20.0.10",
        "192.168.1.1",
        "100.64.0.1",
        "127.0.0.1",
        "fe80::1",
    ):
        assert not any(allowed(rule, address) for rule in rules), address
    # Besides the internet: the cluster's DNS, and pods labelled as backing services.
    selected = [peer for rule in rules for peer in rule["to"] if "ipBlock" not in peer]
    assert [peer["podSelector"]["matchLabels"] for peer in selected] == [
        {"k8s-app": "kube-dns"},
        {"sfumato.dev/backing-service": "true"},
    ]


def test_metrics_ports_answer_only_the_monitoring_namespace(rendered: list[dict[str, Any]]) -> None:
    policies = [p["spec"] for p in by_kind(rendered, "NetworkPolicy").values()]
    ingress = [p for p in policies if "Ingress" in p["policyTypes"]]
    monitoring = [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    for name, deployment in by_kind(rendered, "Deployment").items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        (main,) = deployment["spec"]["template"]["spec"]["containers"]
        metrics_ports = {port["name"] for port in main["ports"] if port["containerPort"] == 9100}
        selecting = [p for p in ingress if selects(p["podSelector"], labels)]
        assert selecting, f"{name}: no ingress policy selects it"
        for policy in selecting:
            for rule in policy["ingress"]:
                ports = {port["port"] for port in rule.get("ports", [])}
                assert ports, f"{name}: a rule opens every port"
                if ports & metrics_ports:
                    assert rule["from"] == monitoring, name


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "Exists"
        if expression["key"] not in labels:
            return False
    return True


def compose_file(name: str = "compose.yaml") -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / name).read_text()))


def test_the_compose_file_runs_every_queue_on_shared_services() -> None:
    services = compose_file()["services"]
    assert {"postgres", "redis", "seaweedfs", "bucket", "migrate", "gateway"} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
    workers = {name: service for name, service in services.items() if name.startswith("worker-")}
    assert sorted(service["command"][1] for service in workers.values()) == sorted(QUEUES)
    gateway = services["gateway"]
    assert "--no-workers" in gateway["command"] and gateway["ports"] == ["127.0.0.1:8000:8000"]
    assert "--metrics-port" in gateway["command"], "metrics off the published port"
    for service in [gateway, *workers.values()]:
        environment = service["environment"]
        assert environment["SFUMATO_BROKER_URL"].startswith("redis://redis:")
        assert environment["SFUMATO_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert environment["SFUMATO_STORAGE_URL"].startswith("s3://")
        assert "/readyz" in " ".join(service["healthcheck"]["test"])
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        # As the pods run (test_every_pod_runs_restricted_on_a_read_only_root).
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
        assert {mount.split(":")[0] for mount in service["tmpfs"]} == {"/tmp", "/var/lib/sfumato"}
    stop_grace = int(next(iter(workers.values()))["stop_grace_period"].removesuffix("s"))
    defaults = ServiceConfig.model_validate(tomllib.loads(DEFAULT_CONFIG.read_text()))
    longest = max(defaults.queues.of(queue).shutdown_grace_seconds for queue in QUEUES)
    assert stop_grace >= longest + SHUTDOWN_DRAIN_SECONDS


# The compose specification's JSON schema, vendored from compose-spec/compose-spec
# (schema/compose-spec.json, Apache-2.0) so the check runs offline.
COMPOSE_SCHEMA = DEPLOY / "schemas" / "compose-spec.json"
# Images withdrawn from public registries: `docker compose up` would fail before anything ran.
WITHDRAWN_IMAGES = ("minio/minio", "minio/mc", "bitnami/minio")
# ${NAME:-default} and ${NAME:?message} as compose substitutes them.
VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}")


def with_defaults(text: str) -> str:
    """`text` as compose writes it when no variable is set beyond the required ones."""
    return VARIABLE.sub(lambda match: match.group(2) or f"<{match.group(1)}>", text)


@pytest.mark.parametrize("name", ["compose.yaml", "compose.local.yaml"])
def test_the_compose_files_are_valid_and_pull_only_public_maintained_images(name: str) -> None:
    compose = compose_file(name)
    jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text())).validate(compose)
    built = {service["image"] for service in compose["services"].values() if "build" in service}
    for service_name, service in compose["services"].items():
        image = service.get("image")
        if image is None:  # an override's service that keeps the base's image
            continue
        assert not image.startswith(WITHDRAWN_IMAGES), (service_name, image)
        assert image in built or "/" not in image or image.startswith("chrislusf/"), image


def test_compose_holds_no_secret_and_publishes_only_on_loopback() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    services = compose_file()["services"]
    for service in services.values():
        for published in service.get("ports", []):
            assert published.startswith("127.0.0.1:"), published
        for name, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET|ACCESS_KEY", name):
                assert VARIABLE.fullmatch(str(value)) or "$$" in str(value), (name, value)
    assert "PASSWORD=" not in text and 'secretKey": "s' not in text
    made = subprocess.run(
        [sys.executable, str(DEPLOY / "make-env.py")], capture_output=True, text=True, check=True
    ).stdout
    variables = dict(line.split("=", 1) for line in made.splitlines())
    required = set(re.findall(r"\$\{(\w+):\?", text))
    assert required <= set(variables)
    assert secret_weakness(variables["SFUMATO_SECRET_KEY"]) is None


def test_compose_presigns_urls_for_the_port_its_s3_store_publishes_on_the_host() -> None:
    services = compose_file()["services"]
    storage = urlsplit(services["gateway"]["environment"]["SFUMATO_STORAGE_URL"])
    options = dict(parse_qsl(storage.query))
    inside, public = urlsplit(options["endpoint"]), urlsplit(options["public_endpoint"])
    store = services[inside.hostname]
    assert f"127.0.0.1:{public.port}:{inside.port}" in store["ports"]
    assert public.hostname in ("127.0.0.1", "localhost")
    assert str(inside.port) in " ".join(store["healthcheck"]["test"])
    # The bucket exists before any service uses it; only the bucket job holds the store's
    # administrator identity, the services one limited to the media bucket.
    bucket = services["bucket"]
    assert bucket["environment"]["SFUMATO_S3_ENDPOINT"] == options["endpoint"]
    assert storage.netloc in " ".join(bucket["command"])
    assert bucket["depends_on"][inside.hostname]["condition"] == "service_healthy"
    for name in ("gateway", "worker-image", "worker-video", "worker-style"):
        assert services[name]["depends_on"]["bucket"]["condition"] == (
            "service_completed_successfully"
        )
        environment = services[name]["environment"]
        assert environment["AWS_ACCESS_KEY_ID"] == store["environment"]["S3_ACCESS_KEY"]
    assert bucket["environment"]["AWS_ACCESS_KEY_ID"] == store["environment"]["S3_ADMIN_ACCESS_KEY"]
    script = " ".join(store["command"])
    services_identity = re.search(r'"name": "sfumato".*?"actions": \[(.*?)\]', script, re.S)
    assert services_identity is not None
    assert all(f":{storage.netloc}" in action for action in services_identity.group(1).split(","))


def test_the_local_override_keeps_every_port_on_loopback() -> None:
    local = compose_file("compose.local.yaml")["services"]
    base = compose_file()["services"]
    assert set(local) == set(base)
    for name, service in local.items():
        assert service["network_mode"] == "host", name
        command = " ".join(
            str(part) for part in service.get("command", []) + service.get("entrypoint", [])
        )
        environment = " ".join(str(value) for value in (service.get("environment") or {}).values())
        for host in re.findall(r"(?:--host[= ]|listen_addresses=|--bind )(\S+)", command):
            assert host == "127.0.0.1", (name, host)
        for address in re.findall(r"//(?:[^@/]*@)?([\w.-]+):\d+", environment):
            assert address == "127.0.0.1", (name, address)


def test_the_deployments_run_what_the_container_test_ran(rendered: list[dict[str, Any]]) -> None:
    """The Kubernetes Deployments and the compose services the stack test starts: the same
    images, commands, ports, probe endpoints and settings."""
    services = compose_file()["services"]
    deployments = by_kind(rendered, "Deployment")
    gateway = container(deployments["sfumato-gateway"])
    assert gateway["args"] == services["gateway"]["command"]
    assert with_defaults(services["gateway"]["image"]) == gateway["image"]
    for queue in QUEUES:
        worker = container(deployments[f"sfumato-worker-{queue}"])
        assert worker["args"] == services[f"worker-{queue}"]["command"]
        if "worker-cpu" in worker["image"]:
            assert with_defaults(services[f"worker-{queue}"]["image"]) == worker["image"]
        ports = {port["containerPort"] for port in worker["ports"]}
        assert {
            int(p)
            for p in re.findall(
                r":(\d+)/readyz", " ".join(services[f"worker-{queue}"]["healthcheck"]["test"])
            )
        } == ports
    settings = set(by_kind(rendered, "ConfigMap")["sfumato-env"]["data"]) | secret_keys()
    compose_settings = set(services["gateway"]["environment"]) - {"AWS_EC2_METADATA_DISABLED"}
    assert compose_settings <= settings


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
