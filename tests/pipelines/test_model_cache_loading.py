"""The model cache loads outside its own lock (issue 19): a slow load of one model holds up no
other model's hit, two threads asking for one model load it once, a failed load leaves nothing
behind. And the load-once helper every layer's process-wide models go through."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.testkit.waits import wait_until
from models.cache import ModelCache
from models.once import Once
from models.registry import ModelSpec


def spec(name: str, memory_gb: float = 1.0) -> ModelSpec:
    return ModelSpec(
        operation="generate",
        model=name,
        folder=Path(f"/models/{name}"),
        pipeline="StableDiffusionPipeline",
        memory_gb=memory_gb,
    )


class SlowLoader:
    """Loads instantly, except the model named `slow`, which waits until released."""

    def __init__(self, slow: str = "") -> None:
        self.slow = slow
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: list[str] = []
        self.fail_next = False

    def __call__(self, model: ModelSpec, device: str) -> Any:
        self.calls.append(model.model)
        if self.fail_next:
            self.fail_next = False
            raise OSError("the disk went away")
        if model.model == self.slow:
            self.started.set()
            assert self.release.wait(30), "the test never released the slow load"
        return object()


def in_thread(action: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(action()), daemon=True)
    thread.start()
    return thread, result


def test_a_slow_load_does_not_hold_up_another_models_hit() -> None:
    loader = SlowLoader(slow="big")
    cache = ModelCache(device="cpu", budget_gb=100, loader=loader)
    small = spec("small")
    cache.ensure(small)
    loading, _ = in_thread(lambda: cache.ensure(spec("big")))
    assert loader.started.wait(10)
    started = time.monotonic()
    with cache.pipeline_for(small):  # under the old process-wide lock: blocked until released
        waited = time.monotonic() - started
    assert waited < 5, f"a cache hit waited {waited:.1f}s for another model's load"
    assert cache.stats.hits == 1 and loading.is_alive()
    loader.release.set()
    loading.join(10)
    assert [key[0] for key in cache.loaded()] == ["/models/small", "/models/big"]


def test_two_threads_asking_for_one_model_load_it_once() -> None:
    loader = SlowLoader(slow="big")
    cache = ModelCache(device="cpu", budget_gb=100, loader=loader)
    threads = [in_thread(lambda: cache.ensure(spec("big")))[0] for _ in range(3)]
    assert loader.started.wait(10)
    # Each asked and missed: the other two now wait on the model's own lock (or, reaching it
    # after the load, find the model loaded; either way the load is not repeated).
    wait_until(lambda: cache.stats.misses == 3, 10, "three misses")
    loader.release.set()
    for thread in threads:
        thread.join(10)
    assert loader.calls == ["big"]
    assert cache.stats.misses == 3 and len(cache.loaded()) == 1


def test_a_failed_load_leaves_nothing_and_the_next_use_loads_again() -> None:
    loader = SlowLoader()
    loader.fail_next = True
    cache = ModelCache(device="cpu", budget_gb=1.5, loader=loader)
    with pytest.raises(OSError, match="disk went away"):
        cache.ensure(spec("a"))
    assert cache.loaded() == []
    cache.ensure(spec("a"))
    cache.ensure(spec("b"))  # the failed load reserved no memory: "a" alone is evicted
    assert loader.calls == ["a", "a", "b"]
    assert cache.stats.evictions == ["/models/a"]


def test_a_model_being_loaded_counts_against_the_budget() -> None:
    loader = SlowLoader(slow="big")
    cache = ModelCache(device="cpu", budget_gb=10, loader=loader)
    cache.ensure(spec("old", memory_gb=4))
    loading, _ = in_thread(lambda: cache.ensure(spec("big", memory_gb=6)))
    assert loader.started.wait(10)
    cache.ensure(spec("new", memory_gb=4))  # 4 + 6 loading + 4 > 10: the old one goes
    loader.release.set()
    loading.join(10)
    assert cache.stats.evictions == ["/models/old"]


def test_once_makes_its_value_once_across_threads_and_retries_after_a_failure() -> None:
    made: list[int] = []
    gate = threading.Event()

    def make() -> int:
        gate.wait(10)
        made.append(1)
        return len(made)

    once: Once[int] = Once()
    threads = [in_thread(lambda: once.get(make)) for _ in range(4)]
    assert once.peek() is None
    gate.set()
    for thread, _ in threads:
        thread.join(10)
    assert made == [1] and [result for _, result in threads] == [[1]] * 4

    def broken() -> int:
        raise RuntimeError("no weights")

    failing: Once[int] = Once()
    with pytest.raises(RuntimeError):
        failing.get(broken)
    assert failing.get(lambda: 7) == 7


def test_a_load_reads_each_weighted_component_in_its_dtype_and_times_it() -> None:
    import torch

    from models.loading import load_pipeline_timed
    from models.registry import load_registry
    from tests.support.diffusion_images import tiny_registry_path

    spec = load_registry(tiny_registry_path()).spec("generate")
    pipe, times = load_pipeline_timed(spec, "cpu")
    assert set(times.components) == {"unet", "vae", "text_encoder"}
    assert all(seconds > 0 for seconds in times.components.values())
    assert times.total >= sum(times.components.values())
    for name in times.components:
        weights = next(getattr(pipe, name).parameters())
        assert weights.device.type == "cpu" and weights.dtype == torch.float32, name
    assert str(times).startswith(f"{times.total:.2f} s (")
