"""BM25 as every full-text search of text units here scores it, in one place.

Three implementations share it: a small build's in-memory index (``bm25s``,
:mod:`graphrag_assets.query.lexical`), a big build's stored words searched by SQL
(:mod:`graphrag_assets.storage.search_tables`) and a server's in-memory copy of those words
(:mod:`graphrag_assets.query.word_index`). They must rank a question's text units alike, so the
word rule and the parameters are bm25s's defaults (Lucene's variant), named here once.
"""

from __future__ import annotations

K1 = 1.5
B = 0.75
# A word: a run of two or more letters or digits of the lower-cased text (an underscore separates
# words, so "20260405_10:00" holds "20260405"), in Python's and in DuckDB's (RE2's) spelling.
WORD = r"(?u)[^\W_]{2,}"
WORD_RE2 = r"[\p{L}\p{N}]{2,}"
