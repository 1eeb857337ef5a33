"""A worker's metrics (Prometheus), served on its probe port (`core/health.ProbeServer`,
`--metrics-port`) with `/healthz` and `/readyz`, never on a public port.

The metric objects are module-level so that any code of the worker can count with them: the
runner times jobs, the batching and the model cache count batch sizes and cache hits through
`batch_ran` and `model_cache_lookup`. Queue depths and GPU memory are read when scraped, so
they cost nothing between scrapes. In embedded mode the workers live in the gateway process and
these metrics appear on the gateway's metrics port.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import redis
from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector

from core.broker import broker_queue
from core.health import CHECK_TIMEOUT_SECONDS
from core.jobs.contract import QUEUES

log = logging.getLogger(__name__)

JOB_SECONDS = Histogram(
    "sfumato_job_duration_seconds",
    "Seconds a worker spent on a job, from its claim to its end, by pipeline and outcome",
    ["pipeline", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
)
BATCH_SIZE = Histogram(
    "sfumato_batch_size",
    "Jobs run together in one pipeline call",
    ["pipeline"],
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
MODEL_CACHE = Counter(
    "sfumato_model_cache_lookups",
    "Model cache lookups by model and result (hit: already loaded; miss: loaded now)",
    ["model", "result"],
)


def job_ended(pipeline: str, outcome: str, seconds: float) -> None:
    """outcome: completed, failed, or abandoned (cancelled, or taken by another worker)."""
    JOB_SECONDS.labels(pipeline, outcome).observe(seconds)


def batch_ran(pipeline: str, size: int) -> None:
    BATCH_SIZE.labels(pipeline).observe(size)


def model_cache_lookup(model: str, hit: bool) -> None:
    MODEL_CACHE.labels(model, "hit" if hit else "miss").inc()


def count_model_cache(kind: str, folder: str) -> None:
    """A listener of the model cache: its hits and misses counted (its evictions are logged)."""
    if kind in ("hit", "miss"):
        model_cache_lookup(folder, kind == "hit")


class QueueDepth(Collector):
    """Messages waiting in each queue's Redis list (what KEDA scales the pools on)."""

    def __init__(self, broker_url: str, namespace: str) -> None:
        self._redis = redis.Redis.from_url(
            broker_url,
            socket_timeout=CHECK_TIMEOUT_SECONDS,
            socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
        )
        self._namespace = namespace

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "sfumato_queue_depth", "Messages waiting in the broker, by queue", labels=["queue"]
        )
        try:
            with self._redis.pipeline(transaction=False) as pipe:
                for queue in QUEUES:
                    pipe.llen(broker_queue(self._namespace, queue))
                depths = pipe.execute()
        except redis.RedisError as error:
            log.warning("queue depth unreadable: %s", error)
            return
        for queue, depth in zip(QUEUES, depths, strict=True):
            family.add_metric([queue], float(depth))
        yield family


class GpuMemory(Collector):
    """CUDA memory per device when torch is loaded and sees a GPU; nothing otherwise."""

    def collect(self) -> Iterator[Metric]:
        torch: Any = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_available():
            return
        family = GaugeMetricFamily(
            "sfumato_gpu_memory_bytes",
            "CUDA memory by device and kind (allocated, reserved by the allocator, total)",
            labels=["device", "kind"],
        )
        for index in range(torch.cuda.device_count()):
            device = str(index)
            family.add_metric([device, "allocated"], float(torch.cuda.memory_allocated(index)))
            family.add_metric([device, "reserved"], float(torch.cuda.memory_reserved(index)))
            total = torch.cuda.get_device_properties(index).total_memory
            family.add_metric([device, "total"], float(total))
        yield family


def install_collectors(broker_url: str | None, namespace: str) -> None:
    """Once per worker process: the scrape-time readings."""
    if broker_url is not None:
        REGISTRY.register(QueueDepth(broker_url, namespace))
    REGISTRY.register(GpuMemory())
