"""A question reads only what it needs from the index, and answers as if the index were loaded whole.

A command-line query reads the index tables on first use (:mod:`graphrag_assets.storage.index_lookups`):
local search reads the relationships of the entities it selected and, for its ranking walk, only
the edges' ends and weights; global search never reads the relationships; basic search reads neither
the graph nor the reports. The reads are recorded by wrapping the real reader over the sample index.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.project.querying import answer_from
from graphrag_assets.project.walk_graph import store_walk_graph
from graphrag_assets.query.lexical import STOPWORDS
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.search_tables import stored_search_tables, sync_search_tables
from graphrag_assets_tests.ranking_cases import assert_ranks_as_frames

QUESTION = "Who is Søren Holm and what does he do?"


class RecordingReader:
    """The stored index's reader, noting every read (method, and the table for whole reads)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.reads: list[str] = []

    def table(self, name: str) -> Any:
        self.reads.append(f"table {name}")
        return self.reader.table(name)

    def columns_of(self, name: str, columns: Sequence[str]) -> Any:
        self.reads.append(f"columns of {name}")
        return self.reader.columns_of(name, columns)

    def relationships_touching(self, titles: Sequence[str], columns: Sequence[str] = ()) -> Any:
        self.reads.append("relationships_touching")
        return self.reader.relationships_touching(titles, columns)

    def ranked_touching(self, titles: Sequence[str], vertex_titles: Sequence[str], scores: Any, cap: int) -> Any:
        self.reads.append("ranked_touching")
        return self.reader.ranked_touching(titles, vertex_titles, scores, cap)

    def relationship_links(self) -> Any:
        self.reads.append("relationship_links")
        return self.reader.relationship_links()

    def walk_graph(self) -> Any:
        self.reads.append("walk_graph")
        return self.reader.walk_graph()

    def rows_where(self, table: str, column: str, values: Sequence[Any], columns: Sequence[str] = ()) -> Any:
        self.reads.append(f"rows of {table}")
        return self.reader.rows_where(table, column, values, columns)

    def first_rows(self, table: str, column: str, values: Sequence[Any], order: Any, limit: int, columns: Any) -> Any:
        self.reads.append(f"first rows of {table}")
        return self.reader.first_rows(table, column, values, order, limit, columns)

    def row_count(self, table: str) -> int:
        return self.reader.row_count(table)


def settings_of(root: Path, ranking: str = "graph") -> Settings:
    (root / "graphrag.yaml").write_text(
        f"method: nlp\nllm:\n  embeddings: local\nquery:\n  local:\n    ranking: {ranking}\n", encoding="utf-8"
    )
    return load_settings(root, environ={})


def recorded(settings: Settings) -> tuple[QueryData, RecordingReader]:
    data = load_query_data(settings)
    reader = RecordingReader(data.reader)
    data.reader = reader
    return data, reader


@pytest.fixture(scope="module")
def project(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(shutil.copytree(nlp_index, tmp_path_factory.mktemp("reads") / "project"))
    store_walk_graph(root / "data" / "graphrag.duckdb", min_relationships=0)  # as a build of 100,000 relationships does
    return root


@pytest.mark.parametrize(
    ("method", "ranking", "not_read"),
    [
        (  # the build stored the walk's graph; of the entities and text units only ids (titles) and chosen rows
            "local",
            "graph",
            {
                "table relationships",
                "relationship_links",
                "relationships_touching",  # ranked by DuckDB, which hands over only the best
                "table entities",
                "table text_units",
                "table communities",
                "table community_reports",  # only the reports of the chosen entities' communities
            },
        ),
        ("local", "msgraphrag", {"table relationships", "relationship_links", "walk_graph"}),
        ("drift", "graph", {"table relationships", "relationship_links"}),
        ("global", "graph", {"table relationships", "relationship_links", "relationships_touching"}),
        (
            "basic",
            "graph",
            {
                "table relationships",
                "relationship_links",
                "relationships_touching",
                "table community_reports",
                "table communities",
                "table entities",  # the extractive answer reads the titles and mentions only
                "table text_units",  # and the rows of the text units it cites
            },
        ),
    ],
)
def test_a_question_reads_what_it_needs_and_answers_as_over_the_whole_index(
    project: Path, method: str, ranking: str, not_read: set[str]
) -> None:
    settings = settings_of(project, ranking)
    options = QueryOptions(method=method)
    data, reader = recorded(settings)
    lazily = answer_from(settings, data, QUESTION, options).to_dict()
    whole = answer_from(settings, load_query_data(settings).load_all(), QUESTION, options).to_dict()
    assert not not_read & set(reader.reads), reader.reads
    if method == "local":
        assert ("ranked_touching" if ranking == "graph" else "relationships_touching") in reader.reads
    for result in (lazily, whole):
        result.pop("usage")
    assert lazily == whole
    assert any(lazily["context_records"].values())


def test_a_build_published_while_answering_is_refused_not_mixed(project: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(project, tmp_path / "project"))
    settings = settings_of(root)
    data = load_query_data(settings)
    with connect(settings.database_path) as conn:  # what publishing a newer build changes
        conn.execute("update corpus_build set run_id = 'a-newer-build'")
    with pytest.raises(UserError, match="the index was rebuilt while the question was being answered; ask again"):
        answer_from(settings, data, QUESTION, QueryOptions(method="local"))


@pytest.mark.parametrize("by_target", [False, True])
def test_duckdb_ranks_a_question_s_relationships_as_the_frames_do(
    project: Path, tmp_path: Path, by_target: bool
) -> None:
    """The ranking local search asks the database for equals the one computed from the touching rows,
    ties included: from the relationships alone, and from them with their ends stored by target (a
    big build's search tables)."""
    root = Path(shutil.copytree(project, tmp_path / "project"))
    settings = settings_of(root)
    if by_target:
        sync_search_tables(settings.database_path, STOPWORDS)
        with connect(settings.database_path, read_only=True) as conn:
            assert stored_search_tables(conn).targets
    data = load_query_data(settings)
    assert data.reader.has_words is by_target
    assert_ranks_as_frames(data, load_query_data(settings).load_all(), seed=11)


def test_the_first_rows_of_some_ids_are_ordered_by_duckdb_as_in_memory(project: Path) -> None:
    """A common name's text units run to thousands; the database hands over the first few in reading order."""
    settings = settings_of(project)
    lazy = QueryData(reader=load_query_data(settings).reader)  # nothing read yet
    whole = load_query_data(settings).load_all()
    ids = whole.text_units["id"].to_list()
    order = ("document_id", "chunk_index", "id")
    for n, wanted in enumerate([ids, ids[::3], ids[5:9], ["no such unit"]]):
        expected = whole.first_rows("text_units", "id", wanted, order, 4 + n, ("id", "chunk_index"))
        found = lazy.first_rows("text_units", "id", wanted, order, 4 + n, ("id", "chunk_index"))
        assert found.equals(expected), n
        assert not lazy.holds("text_units")
    assert expected.is_empty() and expected.columns == ["id", "chunk_index"]
