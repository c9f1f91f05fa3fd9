"""A big build's stored words held in memory: BM25 for a server, without a query to the database.

A build's search tables (:mod:`graphrag_assets.storage.search_tables`) are searched by SQL in a
few tens of milliseconds (the postings of "bridge", 62,882 text units on the 100,000-document
index, joined and summed), which a command-line query pays once but a server paid per question,
where LanceDB's full-text index had taken ~3 ms. A server copies the words once when it loads the
build (``serve.in_memory_words_mb``) into arrays, each word's postings one slice, and scores them
with numpy: the same words, the same BM25 (:mod:`graphrag_assets.core.bm25`), the same order as the
SQL (by the score to 9 places, then by text unit id).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from graphrag_assets.core.bm25 import K1, WORD, B
from graphrag_assets.query.array_index import best_first

_WORD = re.compile(WORD)


class WordIndex:
    """The LexicalIndex protocol over postings sorted by word.

    ``ids`` are the text units by id (a posting names one by its position); ``terms`` the words,
    sorted; word ``i``'s postings are ``starts[i]:starts[i + 1]`` of ``units`` (positions in
    ``ids``), ``tf`` (the word's count in the unit) and ``length`` (the unit's words). ``average``
    is the units' mean length, ``stopwords`` what a question's words leave out.
    """

    def __init__(
        self,
        ids: Sequence[str],
        terms: Sequence[str],
        postings: dict[str, Any],
        average: float,
        stopwords: Sequence[str],
    ) -> None:
        self.ids = list(ids)
        self._position = {term: i for i, term in enumerate(terms)}
        self._starts, self._units = postings["starts"], postings["units"]
        self._tf, self._length = postings["tf"], postings["length"]
        self._average = average
        self._stopwords = set(stopwords)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        import numpy as np

        if k <= 0 or not query.strip() or not self.ids:
            return []
        asked = Counter(word for word in _WORD.findall(query.lower()) if word not in self._stopwords)
        scores = np.zeros(len(self.ids))
        count = len(self.ids)
        for word, times in asked.items():
            i = self._position.get(word)
            if i is None:
                continue
            first, end = self._starts[i], self._starts[i + 1]
            df = end - first
            idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
            tf = self._tf[first:end]
            norm = K1 * ((1 - B) + B * self._length[first:end] / self._average)
            scores[self._units[first:end]] += times * idf * tf / (tf + norm)
        found = np.flatnonzero(scores > 0)
        # ordered as the SQL orders them: by the score to 9 places (equal scores summed in another
        # order differ in the last bits), then by id
        chosen = found[best_first(np.round(scores[found], 9), min(k, len(found)))]
        return [(self.ids[i], float(scores[i])) for i in chosen]
