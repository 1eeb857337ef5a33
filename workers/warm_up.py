"""What a worker prepares before it takes jobs: the pipelines of its queues, loaded now (so a
missing model stops the worker at start rather than failing its first job), and the counting of
the model cache's lookups in the worker metrics."""

from __future__ import annotations

from collections.abc import Sequence

from core.jobs.contract import QUEUE_OF_OPERATION
from pipelines.registry import PipelineRegistry
from workers import metrics


def warm_up(pipelines: PipelineRegistry, queues: Sequence[str]) -> None:
    served = set(pipelines.operations())
    for operation, queue in QUEUE_OF_OPERATION.items():
        if queue in queues and operation in served:
            pipelines.get(operation)


def count_model_cache_lookups(pipelines: PipelineRegistry) -> None:
    pipelines.watch_model_cache(metrics.count_model_cache)
