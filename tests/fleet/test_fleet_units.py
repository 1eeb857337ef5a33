"""Units of the fleet: the worker's scrape-time metrics, the pools' configuration, and the
metrics of an embedded service (its workers' metrics on the gateway's /metrics)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest
from pydantic import ValidationError

from benchmarks.testkit.outages import redis_server
from core.broker import broker_queue
from core.service_config import load_config
from tests.support.fleet import config_file, sample_value
from tests.support.http_jobs import create, wait_done
from tests.support.service import Service
from workers import metrics


def exposition(*collectors: object) -> str:
    registry = CollectorRegistry()
    for collector in collectors:
        registry.register(collector)  # type: ignore[arg-type]
    return generate_latest(registry).decode()


def test_queue_depth_is_the_length_of_each_queues_redis_list(tmp_path: Path) -> None:
    with redis_server(tmp_path) as server:
        client = redis.Redis.from_url(server.url)
        client.rpush(broker_queue("ns", "image"), "a", "b", "c")
        client.rpush(broker_queue("ns", "video"), "d")
        text = exposition(metrics.QueueDepth(server.url, "ns"))
        assert sample_value(text, "sfumato_queue_depth", queue="image") == 3
        assert sample_value(text, "sfumato_queue_depth", queue="video") == 1
        assert 'sfumato_queue_depth{queue="style"} 0.0' in text
        server.kill()
        # Redis away: the scrape still answers, without the family.
        assert "sfumato_queue_depth" not in exposition(metrics.QueueDepth(server.url, "ns"))


def test_gpu_memory_is_reported_per_device_only_when_cuda_is_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The GPU is the edge: a stand-in for torch.cuda with two devices."""
    cuda = SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 2,
        memory_allocated=lambda index: 1000 * (index + 1),
        memory_reserved=lambda index: 2000 * (index + 1),
        get_device_properties=lambda index: SimpleNamespace(total_memory=80_000),
    )
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    text = exposition(metrics.GpuMemory())
    assert sample_value(text, "sfumato_gpu_memory_bytes", device="1", kind="allocated") == 2000
    assert sample_value(text, "sfumato_gpu_memory_bytes", device="0", kind="reserved") == 2000
    assert sample_value(text, "sfumato_gpu_memory_bytes", device="0", kind="total") == 80_000
    cuda.is_available = lambda: False
    assert "sfumato_gpu_memory_bytes" not in exposition(metrics.GpuMemory())


def test_batch_and_cache_metrics_count_what_other_code_reports() -> None:
    before = metrics.MODEL_CACHE.labels("sdxl", "hit")._value.get()
    metrics.model_cache_lookup("sdxl", hit=True)
    metrics.batch_ran("generate", 3)
    assert metrics.MODEL_CACHE.labels("sdxl", "hit")._value.get() == before + 1
    text = generate_latest().decode()
    assert sample_value(text, "sfumato_batch_size_count", pipeline="generate") >= 1


def test_queue_pools_are_configured_per_queue_and_validated(tmp_path: Path) -> None:
    defaults = load_config(None).queues
    assert (defaults.image.concurrency, defaults.video.concurrency) == (2, 1)
    assert (defaults.image.batch_window_ms, defaults.video.batch_window_ms) == (25, 0)
    path = config_file(tmp_path, {"queues": {"video": {"concurrency": 3, "batch_window_ms": 40}}})
    queues = load_config(path).queues
    assert queues.of("video").concurrency == 3 and queues.of("video").batch_window_ms == 40
    assert queues.of("image") == defaults.image
    broken = config_file(tmp_path, {"queues": {"image": {"shutdown_grace_seconds": -1}}})
    with pytest.raises(ValidationError):
        load_config(broken)


@pytest.mark.parametrize("service", ["embedded"], indirect=True)
def test_an_embedded_gateway_shows_its_workers_metrics(service: Service, key: str) -> None:
    with service.client(key) as client:
        wait_done(client, create(client, "[sleep 0] measured in-process")["id"])
        client.request("PROPFIND", "/jobs")
    text = httpx.get(f"{service.metrics_url}/metrics").text
    # A method nobody routes is counted, under a label that cannot grow without bound.
    assert sample_value(text, "sfumato_http_requests_total", method="other") >= 1
    assert 'method="PROPFIND"' not in text
    assert (
        sample_value(
            text, "sfumato_job_duration_seconds_count", pipeline="generate", outcome="completed"
        )
        >= 1
    )
    assert sample_value(text, "sfumato_jobs_created_total", type="image.generate") >= 1
