"""The offline default embedder: WordLlama's static vectors, loaded from the installed wheel only."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphrag_assets.core.settings import EmbeddingSettings, LLMSettings
from graphrag_assets.llm.factory import build_embedding_model
from graphrag_assets.llm.local_embedder import LocalEmbedder
from graphrag_assets.llm.static_embedder import StaticEmbedder, TableRows, map_safetensors
from graphrag_assets.llm.static_model_files import TOKENIZER_FILE, local_embedder_name, package_dir
from graphrag_assets.llm.usage import UsageMeter

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "The storm sank the trawler off the northern cape.",
    "A gale wrecked the fishing boat near the headland.",
    "The bakery sells fresh bread and cakes every morning.",
    "",
]

# Runs in a fresh interpreter: every way out to the network raises and is recorded, then the
# embedder is built and used; prints what was attempted and whether the vectors look right.
_NO_NETWORK_SCRIPT = """
import json, socket, sys
attempts = []
def refuse(kind):
    def blocked(*args, **kwargs):
        attempts.append(kind + ' ' + repr(args[1:] if kind.startswith('socket.') else args)[:80])
        raise OSError('network is unreachable (test guard)')
    return blocked
socket.socket.connect = refuse('socket.connect')
socket.socket.connect_ex = refuse('socket.connect_ex')
socket.create_connection = refuse('create_connection')
socket.getaddrinfo = refuse('getaddrinfo')
try:  # the guard itself works
    socket.socket().connect(("127.0.0.1", 9))
except OSError:
    pass
assert len(attempts) == 1, attempts
attempts.clear()
from graphrag_assets.llm.static_embedder import StaticEmbedder
vectors = StaticEmbedder().embed_sync(["The lighthouse keeper relayed a mayday.", "A keeper of the light"])
print(json.dumps({
    "attempts": attempts,
    "shape": list(vectors.shape),
    "cosine": float(vectors[0] @ vectors[1]),
    "imported": sorted(m for m in ("wordllama", "requests", "huggingface_hub", "urllib3") if m in sys.modules),
}))
"""


def test_vectors_have_meaning_shape_and_unit_norm() -> None:
    embedder = StaticEmbedder()
    vectors = embedder.embed_sync(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (4, 256)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    assert not vectors[3].any()  # empty text: zero vector
    assert embedder.embed_sync([]).shape == (0, 256)
    similar, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert similar > unrelated + 0.2  # storm/gale, trawler/fishing boat share no word but a meaning
    hashed = LocalEmbedder().embed_sync(TEXTS[:2])
    assert similar > float(hashed[0] @ hashed[1])


def test_batch_order_does_not_change_a_vector_and_async_matches_sync() -> None:
    embedder = StaticEmbedder()
    alone = embedder.embed_sync([TEXTS[0]])[0]
    batched = embedder.embed_sync(TEXTS[2::-1] * 20)  # several chunks, words cached across texts
    # bit for bit: an incremental run embeds a few texts, a rebuild all of them, and the two must be equal
    assert np.array_equal(alone, batched[2]) and np.array_equal(alone, batched[-1])
    result = asyncio.run(embedder.embed(TEXTS, purpose="text_unit_text"))
    assert np.allclose(np.asarray(result, dtype=np.float32), embedder.embed_sync(TEXTS))


def test_word_by_word_tokens_equal_the_whole_text_tokens() -> None:
    """The embedder tokenises each distinct word once; that must be what the tokenizer gives the text."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(package_dir() / TOKENIZER_FILE))
    text = "Søren Holm's log, kept since 2004, recorded thirty-two passages; the Meridian Crest grounded!"
    whole = tokenizer.encode(text, add_special_tokens=False).ids
    by_word = [i for word in text.split() for i in tokenizer.encode(word, add_special_tokens=False).ids]
    assert whole == by_word
    table = map_safetensors(package_dir() / "weights" / "l2_supercat_256.safetensors", "embedding.weight")
    expected = table[whole].astype(np.float32).mean(axis=0)
    assert np.allclose(StaticEmbedder().embed_sync([text])[0], expected / np.linalg.norm(expected), atol=1e-5)


def test_weights_are_memory_mapped_not_read() -> None:
    table = map_safetensors(package_dir() / "weights" / "l2_supercat_256.safetensors", "embedding.weight")
    assert isinstance(table, np.memmap) and table.shape == (32000, 256) and table.dtype == np.float16


def test_building_the_embedder_loads_nothing() -> None:
    embedder = StaticEmbedder()
    assert embedder._model is None  # tokenizer and weights wait for the first vector
    embedder.embed_sync(["x"])
    assert embedder._model is not None


def test_no_connection_is_attempted_with_the_network_unreachable() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK_SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    assert report["imported"] == []  # the wordllama package's own loader (requests) never runs
    assert report["shape"] == [2, 256] and report["cosine"] > 0.3


def test_settings_choose_the_embedder_and_its_name() -> None:
    offline = LLMSettings(embeddings="local")
    default = build_embedding_model(offline, EmbeddingSettings(), None, UsageMeter())
    assert isinstance(default, StaticEmbedder)
    assert default.model.startswith("wordllama-l2_supercat-256-0.4")
    assert local_embedder_name(EmbeddingSettings()) == default.model
    fallback = build_embedding_model(
        offline, EmbeddingSettings(local_model="hashing", local_dimension=64), None, UsageMeter()
    )
    assert isinstance(fallback, LocalEmbedder) and fallback.model == "local-hash-v1-64"
    assert local_embedder_name(EmbeddingSettings(local_model="hashing")) == "local"


def test_switching_embedders_changes_the_index_fingerprints(tmp_path: Path) -> None:
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.project.fingerprints import corpus_fingerprint, document_fingerprint

    env = {"PATH": os.environ.get("PATH", "")}
    static = load_settings(tmp_path, environ=env)
    (tmp_path / "graphrag.yaml").write_text("embeddings:\n  local_model: hashing\n", encoding="utf-8")
    hashing = load_settings(tmp_path, environ=env)
    assert hashing.embeddings.local_model == "hashing" and static.embeddings.local_model == "wordllama"
    assert document_fingerprint(static) != document_fingerprint(hashing)
    assert corpus_fingerprint(static) != corpus_fingerprint(hashing)


@pytest.mark.parametrize("missing", ["wordllama"])
def test_a_missing_package_is_one_sentence(missing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from graphrag_assets.core.errors import UserError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    with pytest.raises(UserError, match="embeddings.local_model: hashing"):
        StaticEmbedder().embed_sync(["x"])


def test_combined_vectors_weigh_both_cosines() -> None:
    from graphrag_assets.llm.static_embedder import CombinedEmbedder

    combined = CombinedEmbedder(128)
    vectors = combined.embed_sync(TEXTS)
    assert vectors.shape == (4, 256 + 128) and not vectors[3].any()
    static, hashed = StaticEmbedder().embed_sync(TEXTS[:2]), LocalEmbedder(128).embed_sync(TEXTS[:2])
    expected = 0.5 * float(static[0] @ static[1]) + 0.5 * float(hashed[0] @ hashed[1])
    assert abs(float(vectors[0] @ vectors[1]) - expected) < 1e-5
    assert combined.model == f"{StaticEmbedder().model}+local-hash-v1-128-s0.5"


def test_only_the_rows_asked_for_are_read_and_they_match_the_file() -> None:
    table = map_safetensors(package_dir() / "weights" / "l2_supercat_256.safetensors", "embedding.weight")
    rows = TableRows(table)
    ids = np.array([31999, 5, 9, 5])
    assert np.array_equal(rows[ids], np.asarray(table[ids]))
    assert rows.held == 3
    assert np.array_equal(rows[np.array([9, 1200])], np.asarray(table[[9, 1200]]))
    assert rows.held == 4
