"""One torch thread for tiny models: torch's spinning OpenMP threads slow tiny models many
times over on a shared 2-core machine (a tiny SDXL outpainting: 64 s on two threads under load,
13 s on one)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

# For worker and CLI processes (read at their start).
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """This process's torch on one thread while the block runs (in-process services)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
