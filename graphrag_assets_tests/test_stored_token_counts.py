"""Report token counts are stored when reports are written, and query budgets read them.

The encoding is the real cl100k tokenizer behind a wrapper that records what it is asked to
count: with stored counts, global search and the reports table of local search / DRIFT never
hand a report's text to it; without them (an index built before the column) they count as before.
"""

from __future__ import annotations

import polars as pl
import pytest

from graphrag_assets.core.tokens import get_tokenizer
from graphrag_assets.index.report_tokens import TOKENS_COLUMN, with_content_tokens
from graphrag_assets.query.context_records import REPORT_COLUMNS, report_rows, source_rows
from graphrag_assets.query.context_tables import fill_table, format_row, sized_row
from graphrag_assets.query.global_search import build_map_batches, occurrence_weights, reports_at_level
from graphrag_assets_tests.test_query_global import ScriptedChat, make_data, search, settings


class CountingEncoding:
    """The real encoding; remembers every text it counted."""

    def __init__(self) -> None:
        self.encoding = get_tokenizer("cl100k_base")
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return len(self.encoding.encode_ordinary(text))

    def saw_any(self, contents: list[str]) -> bool:
        return any(content in text for content in contents for text in self.texts)


def reports(stored: bool) -> pl.DataFrame:
    frame = make_data(content_words=150).community_reports
    return with_content_tokens(frame, CountingEncoding().count) if stored else frame


def test_with_content_tokens_counts_the_trimmed_text_and_keeps_nulls() -> None:
    frame = pl.DataFrame({"full_content": ["  # Title\n\nSome text.\n", None]})
    encoding = get_tokenizer("cl100k_base")
    assert with_content_tokens(frame, lambda t: len(encoding.encode_ordinary(t)))[TOKENS_COLUMN].to_list() == [
        len(encoding.encode_ordinary("# Title\n\nSome text.")),
        None,
    ]


def test_with_content_tokens_keeps_the_count_of_a_kept_report_and_counts_the_new_ones() -> None:
    frame = pl.DataFrame(
        {"full_content": ["kept report", "new report"], TOKENS_COLUMN: [999, None]},
        schema_overrides={TOKENS_COLUMN: pl.Int64},
    )
    encoding = CountingEncoding()
    assert with_content_tokens(frame, encoding.count)[TOKENS_COLUMN].to_list() == [999, encoding.count("new report")]
    assert encoding.texts == ["new report", "new report"]  # the kept report was not counted


@pytest.mark.parametrize("stored", [True, False], ids=["stored-counts", "index-without-counts"])
def test_global_map_batches_tokenize_report_text_only_without_stored_counts(stored: bool) -> None:
    data = make_data(content_words=150)
    frame = reports(stored)
    level = reports_at_level(data.communities, frame, 2, roll_up=False)
    weights = occurrence_weights(data.communities, data.entities, level["community"].to_list())
    encoding = CountingEncoding()
    batches, too_large = build_map_batches(level, weights, seed=86, max_tokens=1200, count=encoding.count)
    assert encoding.saw_any(level["full_content"].to_list()) is not stored
    counted = level.with_columns(pl.lit(None, dtype=pl.Int64).alias(TOKENS_COLUMN))  # every row counted here
    reference, _ = build_map_batches(counted, weights, seed=86, max_tokens=1200, count=CountingEncoding().count)
    assert [b.report_citations for b in batches] == [b.report_citations for b in reference]
    assert too_large == [] and len(batches) > 1


def test_global_search_end_to_end_does_not_tokenize_stored_reports() -> None:
    data = make_data(content_words=150)
    data.community_reports = with_content_tokens(data.community_reports, CountingEncoding().count)
    encoding = CountingEncoding()
    result = search(
        ScriptedChat({"query_global_map": '{"points": []}'}),
        data,
        options=settings(max_context_tokens=1200),
        count=encoding.count,
    )
    assert len(result.details["batches"]) > 1
    assert encoding.texts and not encoding.saw_any(data.community_reports["full_content"].to_list())


@pytest.mark.parametrize("stored", [True, False], ids=["stored-counts", "index-without-counts"])
def test_the_local_reports_table_uses_stored_counts(stored: bool) -> None:
    frame = reports(stored)
    encoding = CountingEncoding()
    table = fill_table("Reports", REPORT_COLUMNS, report_rows(frame, encoding.count), 2000, encoding.count)
    assert encoding.saw_any(frame["full_content"].to_list()) is not stored
    counted = fill_table(
        "Reports",
        REPORT_COLUMNS,
        frame.select("human_readable_id", "title", "full_content").rows(),
        2000,
        CountingEncoding().count,
    )
    assert (table.rows_used, table.text) == (counted.rows_used, counted.text) and table.rows_used >= 2


def test_a_sized_row_is_within_a_token_or_two_of_counting_the_line() -> None:
    encoding = CountingEncoding()
    for row in reports(True).iter_rows(named=True):
        cells = (row["human_readable_id"], row["title"], 0.4286, row["full_content"], row["rank"])
        sized = sized_row(cells, 3, row[TOKENS_COLUMN], encoding.count)
        assert abs(sized.tokens - encoding.count(format_row(cells) + "\n")) <= 2


def test_sources_rows_are_sized_from_text_unit_n_tokens() -> None:
    units = pl.DataFrame(
        {"id": ["a" * 32, "b" * 32], "text": ["alpha beta gamma " * 50, "delta"], "n_tokens": [150, None]}
    )
    encoding = CountingEncoding()
    rows = source_rows(units, encoding.count)
    assert rows[0].tokens == encoding.count(format_row((rows[0][0], None)) + "\n") + 150
    assert not hasattr(rows[1], "tokens")  # no stored count: counted by the table as before
    assert not encoding.saw_any(["alpha beta"])


def test_an_offline_index_stores_report_token_counts(nlp_index) -> None:
    from graphrag_assets_testkit.projects import query_db

    rows = query_db(nlp_index, f"select full_content, {TOKENS_COLUMN} from community_reports")
    encoding = get_tokenizer("cl100k_base")
    assert rows and all(n == len(encoding.encode_ordinary(text.strip())) for text, n in rows)
