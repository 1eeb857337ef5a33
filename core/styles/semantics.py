"""How a style's assets and a search's query become vectors and how vectors are ranked: the
sentence model's functions (`pipelines.styles`), handed in by the composition root
(`sfumato/processes.asset_semantics`), so core never imports pipelines; and the model's load at a
process's start."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

Describe = Callable[[str, str, str, bytes, str | None], str]
Embed = Callable[[Sequence[str]], np.ndarray]
Rank = Callable[[np.ndarray, np.ndarray, int], list[tuple[int, float]]]


@dataclass(frozen=True)
class AssetSemantics:
    """`describe` an asset (its name, alt text, surrounding text, bytes and type) as the text it
    is embedded as; `embed` texts as unit vectors; `rank` a matrix of them against one vector;
    `load` the model now, `loaded` whether it is."""

    describe: Describe
    embed: Embed
    rank: Rank
    load: Callable[[], None]
    loaded: Callable[[], bool]


class SentenceModelLoad:
    """The sentence model loaded at a process's start in a background thread, so no search pays
    for it and no event loop waits on it; `check` is a readiness check (raises until loaded),
    `wait` waits for the load to end, loaded or failed."""

    def __init__(self, semantics: AssetSemantics) -> None:
        self.semantics = semantics
        self._started = threading.Event()
        self._ended = threading.Event()
        self._failure: str | None = None

    def start(self) -> None:
        if self._started.is_set() or self.semantics.loaded():
            self._ended.set()
            return
        self._started.set()
        threading.Thread(target=self._load, name="sentence-model", daemon=True).start()

    def _load(self) -> None:
        try:
            self.semantics.load()
        except Exception as error:  # a search loads it again on first use
            log.exception("loading the sentence model failed")
            self._failure = f"{type(error).__name__}: {error}"
        finally:
            self._ended.set()

    def check(self) -> None:
        if self.semantics.loaded():
            return
        raise RuntimeError(self._failure or "loading")

    def wait(self, timeout: float | None = None) -> bool:
        return self._ended.wait(timeout)
