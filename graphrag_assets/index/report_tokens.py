"""The token count of each community report's text, stored with the report.

Global search packs every report of a level into token-bounded map batches, and local search and
DRIFT fill a report table within a budget: counting the reports' text for every question costs a
full tokenization of all reports per query (tens of milliseconds on a small index, seconds on a
large one). The text only changes when the report is written, so it is counted then, into
``full_content_tokens``; the query side (:func:`graphrag_assets.query.context_tables.sized_row`)
counts only the short cells around it. The text is counted trimmed, as a context table writes it.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

TOKENS_COLUMN = "full_content_tokens"


def with_content_tokens(reports: pl.DataFrame, count: Callable[[str], int]) -> pl.DataFrame:
    """``reports`` with ``full_content_tokens`` counted from ``full_content`` (null where it is null).

    A row that holds a count already keeps it: it is a report kept from the previous build, whose
    text is the one counted (an update keeps nearly all 11,000 reports at 100,000 documents, and
    counting them again took 2 s of it).
    """
    texts = reports["full_content"].to_list()
    known = reports[TOKENS_COLUMN].to_list() if TOKENS_COLUMN in reports.columns else [None] * len(texts)
    counted = [
        tokens if tokens is not None or text is None else count(text.strip()) for text, tokens in zip(texts, known)
    ]
    return reports.with_columns(pl.Series(TOKENS_COLUMN, counted, dtype=pl.Int64))
