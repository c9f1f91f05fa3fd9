"""The offline hashing embedder: shape, determinism across processes, similarity sanity."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from graphrag_assets.llm.local_embedder import LocalEmbedder

TEXTS = [
    "Tomas, the lighthouse keeper, runs the light on the northern cape every night.",
    "Åsa Lindqvist opened Café Noir by Lake Mirren.",
    "",
]

_DIGEST_SCRIPT = """
import hashlib, sys
from graphrag_assets.llm.local_embedder import LocalEmbedder
texts = sys.stdin.read().split("\\x1e")
print(hashlib.sha256(LocalEmbedder(256).embed_sync(texts).tobytes()).hexdigest())
"""


def digest(texts: list[str]) -> str:
    return hashlib.sha256(LocalEmbedder(256).embed_sync(texts).tobytes()).hexdigest()


def cosine(a: str, b: str, embedder: LocalEmbedder | None = None) -> float:
    vectors = (embedder or LocalEmbedder()).embed_sync([a, b])
    return float(vectors[0] @ vectors[1])


def test_shape_dtype_norm_and_model_name() -> None:
    embedder = LocalEmbedder()
    assert embedder.model == "local-hash-v1-512"
    assert LocalEmbedder(64).model == "local-hash-v1-64"
    vectors = embedder.embed_sync(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 512)
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[:2], 1.0, atol=1e-5)
    assert norms[2] == 0.0  # empty text: zero vector
    assert embedder.embed_sync([]).shape == (0, 512)


def test_async_embed_matches_sync() -> None:
    embedder = LocalEmbedder(128)
    result = asyncio.run(embedder.embed(TEXTS, purpose="text_unit_text"))
    assert isinstance(result, list) and all(isinstance(v, list) for v in result)
    assert np.array_equal(np.asarray(result, dtype=np.float32), embedder.embed_sync(TEXTS))


def test_same_vectors_in_a_new_process_with_another_hash_seed() -> None:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    completed = subprocess.run(
        [sys.executable, "-c", _DIGEST_SCRIPT],
        input="\x1e".join(TEXTS),
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=True,
        timeout=60,
    )
    assert completed.stdout.strip() == digest(TEXTS)


def test_batch_order_does_not_change_a_vector() -> None:
    embedder = LocalEmbedder()
    alone = embedder.embed_sync([TEXTS[0]])[0]
    batched = embedder.embed_sync([TEXTS[1], TEXTS[0]])[1]
    assert np.array_equal(alone, batched)


def test_paraphrase_is_closer_than_unrelated_text() -> None:
    original = "The old man counted his money in the cold counting-house."
    paraphrase = "In the chilly counting house, the elderly man was counting money."
    unrelated = "Children played football in the sunny park after school."
    assert cosine(original, paraphrase) > 0.4
    assert cosine(original, paraphrase) > cosine(original, unrelated) + 0.3


def test_query_is_closer_to_the_relevant_sentence() -> None:
    query = "who runs the lighthouse"
    keeper = "Tomas, the lighthouse keeper, runs the light on the northern cape every night."
    market = "The market in the square sells fish and bread every morning."
    assert cosine(query, keeper) > cosine(query, market) + 0.3


def test_word_pieces_link_inflected_forms() -> None:
    assert cosine("lighthouses", "lighthouse") > 0.5
    assert cosine("lighthouses", "marketplace") < 0.2


def test_function_words_weigh_little() -> None:
    shared_function_words = cosine("the cat sat on the mat", "the dog ran to the park")
    shared_content = cosine("the cat sat on the mat", "a cat sat on a rug")
    assert shared_content > shared_function_words + 0.3


def test_dimension_changes_the_vectors() -> None:
    assert LocalEmbedder(64).embed_sync(TEXTS[:1]).shape == (1, 64)
    small, large = LocalEmbedder(64).embed_sync(TEXTS[:1])[0], LocalEmbedder(128).embed_sync(TEXTS[:1])[0]
    assert not np.array_equal(small, large[:64])
