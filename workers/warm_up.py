"""What a worker prepares before it takes jobs: the pipelines of its queues, loaded now (so a
missing model stops the worker at start rather than failing its first job) and warmed up (their
models compiled for the shapes their jobs run, never inside a job: models/tuning.py), said in
the start-up log with how long each took; and the counting of the model cache's lookups in the
worker metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from core.jobs.contract import QUEUE_OF_OPERATION
from pipelines.base import WarmsUp
from pipelines.registry import PipelineRegistry
from workers import metrics

log = logging.getLogger(__name__)


def warm_up(pipelines: PipelineRegistry, queues: Sequence[str]) -> None:
    served = set(pipelines.operations())
    for operation, queue in QUEUE_OF_OPERATION.items():
        if queue in queues and operation in served:
            started = time.perf_counter()
            pipeline = pipelines.get(operation)
            log.info("%s ready in %.2f s", operation, time.perf_counter() - started)
            if isinstance(pipeline, WarmsUp):
                started = time.perf_counter()
                lines = pipeline.warm_up()
                for line in lines:
                    log.info("%s warm-up: %s", operation, line)
                if lines:
                    log.info("%s warmed up in %.1f s", operation, time.perf_counter() - started)


def count_model_cache_lookups(pipelines: PipelineRegistry) -> None:
    pipelines.watch_model_cache(metrics.count_model_cache)
