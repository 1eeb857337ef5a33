"""Load-once values of a process: a model, a network, an engine, made on first use and shared.

    _network: Once[IFNet] = Once()

    def load_network() -> IFNet:
        return _network.get(_load_ifnet)

Threads asking at once make it once (the others wait for it); a maker that raises leaves
nothing behind, so the next call tries again. Imports nothing but the standard library, so
every layer may use it (`pipelines` import only `models`; `core` may as well).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made = False
        self._value: T | None = None

    def get(self, make: Callable[[], T]) -> T:
        """The value, made by `make` the first time."""
        if not self._made:
            with self._lock:
                if not self._made:
                    self._value = make()
                    self._made = True
        return self._value  # type: ignore[return-value]  # made: a T (None only if T allows it)

    def peek(self) -> T | None:
        """The value if it was made, without making it."""
        return self._value if self._made else None
