"""The offline default embedder: WordLlama's static token embeddings, read from the installed wheel.

Feature hashing (:mod:`.local_embedder`) only matches shared words; a static embedding model knows
that "storm" and "gale" are close. The PyPI package ``wordllama`` (MIT) ships one inside its wheel:
``weights/l2_supercat_256.safetensors`` (a 32,000 x 256 float16 table, one row per token of the
Llama-2 tokenizer, 16 MB) and ``tokenizers/l2_supercat_tokenizer_config.json``. A text's vector is
the mean of its tokens' rows, L2-normalised — the model's own recipe (average pooling, no special
tokens), so the vectors are the ones it was trained to produce.

Why not ``wordllama.WordLlama.load()``: it looks for the tokenizer in a folder the wheel does not
have and then downloads it, and importing the package pulls in ``requests`` and its clustering
extensions. Here the package is only *located* (``importlib.util.find_spec``, which runs none of
its code); the tokenizer is read with the ``tokenizers`` library from the wheel's own file, and the
weights are located in the safetensors file (an 8-byte header length, a JSON header, then the
raw table) and read row by row as tokens are first met (:class:`TableRows`), so nothing is
downloaded and only the rows of tokens in use are held in memory.

Both are loaded lazily, on the first :meth:`StaticEmbedder.embed_sync`: building the embedder (a
query that never embeds, ``status``) costs nothing. The model name
``wordllama-l2_supercat-256-<wheel version>`` is stored with every vector and is part of the index
fingerprint, so a project that switches between this and the hashing fallback re-embeds once.
"""

from __future__ import annotations

import itertools
import json
import os
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from graphrag_assets.core.errors import UserError
from graphrag_assets.llm.static_model_files import (
    DIMENSION,
    FALLBACK_HINT,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    model_name,
    package_dir,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TABLE_NAME = "embedding.weight"
# texts pooled at once: up to TEXTS_PER_CHUNK of them or TOKENS_PER_CHUNK tokens, so the count
# matrix (texts x distinct tokens, float32) stays under ~16 MB
TEXTS_PER_CHUNK = 512
TOKENS_PER_CHUNK = 8192
MAX_CACHED_WORDS = 200_000  # distinct words whose token ids one call keeps (a few tens of MB at most)
_SAFETENSORS_DTYPES = {"F16": np.float16, "F32": np.float32}


def map_safetensors(path: Path, name: str) -> np.ndarray:
    """The tensor ``name`` of a safetensors file as a read-only memory map (no copy, no parsing library)."""
    with path.open("rb") as handle:
        (header_length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_length))
    entry = header[name]
    begin, _ = entry["data_offsets"]
    dtype = _SAFETENSORS_DTYPES[entry["dtype"]]
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + header_length + begin, shape=tuple(entry["shape"]))


class TableRows:
    """The rows of a memory-mapped table, read with ``pread`` the first time they are asked for and
    kept side by side in a compact array.

    Indexing the map itself would make every page it touches resident: eight rows share a 4 KB page,
    so the ~9,000 distinct tokens of *A Christmas Carol* touched nearly all of the 16 MB. Read row
    by row, the process keeps only the rows in use (512 bytes each), and the file's pages stay in
    the kernel's page cache, shared and not counted in its memory.
    """

    def __init__(self, table: np.memmap) -> None:
        self.vocabulary, self.dimension = table.shape
        self._dtype = table.dtype
        self._row_bytes = self.dimension * table.dtype.itemsize
        self._path, self._offset = str(table.filename), table.offset
        self._slot = np.full(self.vocabulary, -1, dtype=np.int64)  # token id -> row of _rows
        self._rows = np.empty((0, self.dimension), dtype=table.dtype)
        self._count = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """How many rows have been read so far."""
        return self._count

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        """The rows of these token ids (each in ``[0, vocabulary)``), in the order given."""
        with self._lock:
            missing = np.unique(ids[self._slot[ids] < 0])
            if missing.size:
                self._read(missing)
            return self._rows[self._slot[ids]]

    def _read(self, ids: np.ndarray) -> None:
        needed = self._count + ids.size
        if needed > self._rows.shape[0]:
            grown = np.empty((max(needed, 2 * self._rows.shape[0], 1024), self.dimension), dtype=self._dtype)
            grown[: self._count] = self._rows[: self._count]
            self._rows = grown
        fd = os.open(self._path, os.O_RDONLY)
        try:
            for token in ids.tolist():
                raw = os.pread(fd, self._row_bytes, self._offset + token * self._row_bytes)
                self._rows[self._count] = np.frombuffer(raw, dtype=self._dtype)
                self._slot[token] = self._count
                self._count += 1
        finally:
            os.close(fd)


@dataclass(frozen=True)
class _Model:
    tokenizer: Tokenizer
    table: TableRows  # (vocabulary, dimension) float16, rows read on demand from the weights file


def _load() -> _Model:
    from tokenizers import Tokenizer  # the Rust tokenizer: only when a vector is needed

    folder = package_dir()
    weights, tokenizer_file = folder / WEIGHTS_FILE, folder / TOKENIZER_FILE
    missing = [str(p) for p in (weights, tokenizer_file) if not p.is_file()]
    if missing:
        raise UserError(
            f"the installed 'wordllama' package lacks {', '.join(missing)}; reinstall it "
            f"(pip install --force-reinstall wordllama), {FALLBACK_HINT}."
        )
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return _Model(tokenizer, TableRows(map_safetensors(weights, TABLE_NAME)))


class StaticEmbedder:
    """The :class:`~graphrag_assets.llm.types.EmbeddingModel` used offline by default (module doc)."""

    dimension = DIMENSION
    reproducible = True  # the vector is a function of the model name and the text (EmbeddingModel)

    def __init__(self) -> None:
        self.model = model_name()
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> _Model:
        with self._lock:
            if self._model is None:
                self._model = _load()
            return self._model

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[list[float]]:
        """One vector per text, in order (``purpose`` is accepted for the protocol and unused)."""
        return self.embed_sync(texts).tolist()

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """``float32`` array of shape ``(len(texts), 256)``, rows L2-normalised (an empty text: zeros)."""
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        model = self._loaded()
        pieces: dict[str, tuple[int, ...]] = {}  # word -> token ids, for this call (see _token_ids)
        chunk: list[np.ndarray] = []
        start = tokens = 0
        for row, text in enumerate(texts):
            ids = _token_ids(model.tokenizer, text or "", pieces)
            chunk.append(ids)
            tokens += ids.size
            if tokens >= TOKENS_PER_CHUNK or len(chunk) >= TEXTS_PER_CHUNK or row == len(texts) - 1:
                _pool(model.table, chunk, out[start : row + 1])
                chunk, start, tokens = [], row + 1, 0
                if len(pieces) > MAX_CACHED_WORDS:
                    pieces.clear()
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _token_ids(tokenizer: Tokenizer, text: str, pieces: dict[str, tuple[int, ...]]) -> np.ndarray:
    """The token ids of ``text`` with its whitespace collapsed, tokenised word by word.

    The Llama tokenizer marks each word's start with "▁" and none of its pieces crosses a word
    boundary, so tokenising each distinct word once gives exactly the ids of the whole text (checked
    on *A Christmas Carol*) at a fraction of the cost: a corpus repeats its words. Newlines and runs
    of spaces, which would add whitespace tokens, are collapsed first: they carry no meaning.
    """
    words = text.split()
    new = list({w for w in words if w not in pieces})
    if new:
        for word, encoding in zip(new, tokenizer.encode_batch(new, add_special_tokens=False), strict=True):
            pieces[word] = tuple(encoding.ids)
    return np.fromiter(itertools.chain.from_iterable(pieces[w] for w in words), dtype=np.int64)


def _pool(table: TableRows, ids: list[np.ndarray], out: np.ndarray) -> None:
    """Mean of each text's token rows, written into ``out`` (a text with no token stays zero).

    Each text is pooled on its own, over its distinct tokens in id order weighted by their counts
    and summed in float64: a text's vector then depends on the text alone, never on which other
    texts share its call. A product over a whole chunk was faster but its summation order followed
    the chunk's distinct tokens, so an incremental run (a few changed texts) and a rebuild (all of
    them) gave vectors 2e-8 apart, and the index no longer equalled a rebuild.
    """
    last = table.vocabulary - 1
    for row, text_ids in enumerate(ids):
        if not text_ids.size:
            continue
        distinct, counts = np.unique(np.clip(text_ids, 0, last), return_counts=True)
        weighted = table[distinct].astype(np.float64) * counts[:, None]
        out[row] = weighted.sum(axis=0) / text_ids.size


class CombinedEmbedder:
    """The static model's vector and the hashing vector side by side, weighted so that a dot
    product is ``STATIC_SHARE`` × the static cosine + the rest × the hashing cosine.

    Static vectors know meaning but blur names (every rare name is a few word pieces); hashing
    vectors match names and numbers exactly but know no synonyms. One vector holding both lets
    every vector index and ranking use both without a second table.
    """

    STATIC_SHARE = 0.5
    reproducible = True  # the vector is a function of the model name and the text (EmbeddingModel)

    def __init__(self, hashing_dimension: int) -> None:
        from graphrag_assets.llm.local_embedder import LocalEmbedder

        self._static = StaticEmbedder()
        self._hashing = LocalEmbedder(hashing_dimension)
        self.dimension = DIMENSION + hashing_dimension
        self.model = f"{self._static.model}+{self._hashing.model}-s{self.STATIC_SHARE}"

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[list[float]]:
        """One vector per text, in order (``purpose`` is accepted for the protocol and unused)."""
        return self.embed_sync(texts).tolist()

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """``float32`` array ``(len(texts), 256 + hashing dimension)``; rows of unit length (or zero)."""
        static = self._static.embed_sync(texts) * np.float32(np.sqrt(self.STATIC_SHARE))
        hashed = self._hashing.embed_sync(texts) * np.float32(np.sqrt(1.0 - self.STATIC_SHARE))
        return np.hstack([static, hashed])
