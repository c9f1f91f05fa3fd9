"""An offline text embedder: signed feature hashing, no model, no download.

Used when no embedding endpoint is configured (``llm.embeddings: local`` or ``auto`` without an
endpoint), so vector search still works on a machine with no network. It is a bag of features,
not a language model: it finds passages that share words, word pairs and word pieces with the
query, which is what an extractive pipeline needs, but it knows no synonyms.

Features of a lower-cased text (words are runs of Unicode letters and digits):

- word unigrams (weight 1; function words 0.25, see :func:`function_words`),
- word bigrams (weight 0.7; pairs of two function words are skipped),
- character 3- to 5-grams inside each content word, with ``<`` and ``>`` marking its ends
  (weight 0.3 each), so "lighthouse" and "lighthouses" or "keeper" and "keepers" overlap.

Each feature is hashed with BLAKE2b (never Python's ``hash()``, which changes per process) to a
64-bit number; its low bits modulo ``dimension`` pick the coordinate and its top bit the sign.
A feature occurring ``c`` times contributes ``weight · (1 + ln c)`` (sublinear tf). The vector
is L2-normalised, so a dot product is a cosine; an empty text gives the zero vector. The model
name ``local-hash-v1-<dimension>`` identifies this exact recipe: change the recipe, change the
version, so stored vectors are never compared with vectors made differently.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from graphrag_assets.core.words import function_words

DEFAULT_DIMENSION = 512
UNIGRAM_WEIGHT = 1.0
FUNCTION_WORD_WEIGHT = 0.25
BIGRAM_WEIGHT = 0.7
CHAR_NGRAM_WEIGHT = 0.3
CHAR_NGRAM_SIZES = (3, 4, 5)

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_SIGN_BIT = np.uint64(63)
_MIX_A = np.uint64(0x9E3779B97F4A7C15)
_MIX_B = np.uint64(0xBF58476D1CE4E5B9)
_MIX_C = np.uint64(0x94D049BB133111EB)


def _hash64(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


@functools.lru_cache(maxsize=262_144)
def _word_features(word: str) -> tuple[int, np.ndarray, bool]:
    """(unigram hash, char n-gram hashes, is a function word) of one lower-case word."""
    functional = word in function_words()
    unigram = _hash64("w\x1f" + word)
    if functional:
        return unigram, np.empty(0, dtype=np.uint64), True
    marked = f"<{word}>"
    grams = [marked[i : i + n] for n in CHAR_NGRAM_SIZES for i in range(len(marked) - n + 1)]
    hashes = np.fromiter((_hash64("c\x1f" + g) for g in grams), dtype=np.uint64, count=len(grams))
    return unigram, hashes, False


def _mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A fixed 64-bit mix of two hash arrays (splitmix64 finaliser): the bigram feature hash."""
    with np.errstate(over="ignore"):
        x = a * _MIX_A ^ b
        x = (x ^ (x >> np.uint64(30))) * _MIX_B
        x = (x ^ (x >> np.uint64(27))) * _MIX_C
        return x ^ (x >> np.uint64(31))


def words_of(text: str) -> list[str]:
    """Lower-case words of a text, as the embedder sees them."""
    return _WORD.findall(unicodedata.normalize("NFC", text).replace("\u2019", "'").lower())


class LocalEmbedder:
    """The :class:`~graphrag_assets.llm.types.EmbeddingModel` used offline (see the module doc)."""

    reproducible = True  # the vector is a function of the model name and the text (EmbeddingModel)

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self.dimension = dimension
        self.model = f"local-hash-v1-{dimension}"

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[list[float]]:
        """One vector per text, in order (``purpose`` is accepted for the protocol and unused)."""
        return self.embed_sync(texts).tolist()

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """``float32`` array of shape ``(len(texts), dimension)``, rows L2-normalised."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._embed_one(text or "")
        return out

    def _embed_one(self, text: str) -> np.ndarray:
        words = words_of(text)
        if not words:
            return np.zeros(self.dimension, dtype=np.float32)
        features = [_word_features(w) for w in words]
        unigrams = np.fromiter((f[0] for f in features), dtype=np.uint64, count=len(features))
        functional = np.fromiter((f[2] for f in features), dtype=bool, count=len(features))
        grams = [f[1] for f in features if f[1].size]

        parts = [unigrams]
        weights = [np.where(functional, FUNCTION_WORD_WEIGHT, UNIGRAM_WEIGHT)]
        if len(words) > 1:
            keep = ~(functional[:-1] & functional[1:])
            parts.append(_mix(unigrams[:-1], unigrams[1:])[keep])
            weights.append(np.full(int(keep.sum()), BIGRAM_WEIGHT))
        if grams:
            all_grams = np.concatenate(grams)
            parts.append(all_grams)
            weights.append(np.full(all_grams.size, CHAR_NGRAM_WEIGHT))
        hashes = np.concatenate(parts)
        weight_of = np.concatenate(weights)

        unique, first, counts = np.unique(hashes, return_index=True, return_counts=True)
        values = weight_of[first] * (1.0 + np.log(counts))
        signs = np.where((unique >> _SIGN_BIT) & np.uint64(1), 1.0, -1.0)
        index = (unique % np.uint64(self.dimension)).astype(np.int64)
        vector = np.bincount(index, weights=signs * values, minlength=self.dimension)
        norm = float(np.sqrt(np.dot(vector, vector)))
        if norm == 0.0:
            return np.zeros(self.dimension, dtype=np.float32)
        return (vector / norm).astype(np.float32)
