"""BM25 over texts held in memory (``bm25s``): the lexical index of a small index.

A large index stores its text units' words with each build and is searched by SQL, with the same
words and the same BM25 (:mod:`graphrag_assets.storage.search_tables`); an index small enough to
tokenize in a few milliseconds is searched here (see ``project/query_data.py``). Same contract: the
ids of the texts that contain query words, best first; texts without any query word are not returned.

Words are runs of two or more letters or digits: an underscore separates words, so a chat log
stamped ``Time: 20260405_10:00`` is found by "20260405" (bm25s's default, ``\w\w+``, keeps
``20260405_10`` as one word that no question holds).
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
from bm25s.stopwords import STOPWORDS_EN
from bm25s.tokenization import Tokenizer

from graphrag_assets.core.bm25 import K1, WORD, B

STOPWORDS = list(STOPWORDS_EN)  # what a big build's stored words leave out too


class Bm25Index:
    """The LexicalIndex protocol over ``texts`` (keyed by ``ids``), built when it is created."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        # Indexed in id order: texts of equal score come back in the order they were indexed, which
        # must not depend on the order the rows were stored in (a rebuild and an update differ).
        pairs = sorted(zip(ids, texts))
        self._ids = [i for i, _ in pairs]
        self._tokenizer = Tokenizer(stopwords=STOPWORDS, splitter=WORD)
        self._retriever = bm25s.BM25(k1=K1, b=B)
        if self._ids:
            self._retriever.index(
                self._tokenizer.tokenize([t for _, t in pairs], return_as="ids", show_progress=False),
                show_progress=False,
            )

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if k <= 0 or not self._ids or not query.strip():
            return []
        tokens = self._tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)
        # bm25s gives a text without words, and a question's unknown words, the empty token: left
        # out, a question's unknown words find no text (as the SQL over a big build's words)
        empty = self._tokenizer.get_vocab_dict().get("")
        words = [token for token in tokens[0] if token != empty]
        if not words:
            return []
        found, scores = self._retriever.retrieve([words], k=min(k, len(self._ids)), show_progress=False)
        return [(self._ids[i], float(s)) for i, s in zip(found[0].tolist(), scores[0].tolist()) if s > 0]
