"""The Dagster materializations of ``communities`` and ``community_reports`` show the largest
communities as a markdown table (with report titles once the reports exist)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from dagster import AssetKey

from graphrag_assets.core import schemas
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.assets.metadata import largest_communities
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets_testkit.projects import query_db


def table_rows(markdown: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in markdown.splitlines()[2:]]


def test_materializations_show_the_largest_communities(standard_index: Path) -> None:
    instance = open_instance(load_settings(standard_index))
    expected = query_db(
        standard_index,
        """
        select c.community, c.level, c.size, r.title from communities c left join community_reports r using (community)
        order by c.size desc, c.level, c.community limit 10""",
    )
    communities = instance.get_latest_materialization_event(AssetKey("communities")).asset_materialization.metadata
    rows = table_rows(communities["largest_communities"].value)
    assert [(int(r[0]), int(r[1]), int(r[3])) for r in rows] == [(c, level, size) for c, level, size, _ in expected]
    top = query_db(
        standard_index,
        f"""
        select e.title from entities e where list_contains((select entity_ids from communities where community = {expected[0][0]}), e.id)
        order by e.degree desc, e.title limit 5""",
    )
    assert rows[0][4] == ", ".join(t for (t,) in top)
    reports = instance.get_latest_materialization_event(AssetKey("community_reports")).asset_materialization.metadata
    rows = table_rows(reports["largest_communities"].value)
    assert [(int(r[0]), r[4]) for r in rows] == [(c, title.replace("|", "\\|")[:120]) for c, _, _, title in expected]


def test_an_empty_graph_has_an_empty_overview() -> None:
    empty = largest_communities(schemas.empty_frame(schemas.COMMUNITIES), schemas.empty_frame(schemas.ENTITIES))
    assert empty.value == "_(no rows)_"
    with_reports = largest_communities(
        schemas.empty_frame(schemas.COMMUNITIES),
        schemas.empty_frame(schemas.ENTITIES),
        pl.DataFrame(schema=schemas.COMMUNITY_REPORTS),
    )
    assert with_reports.value == "_(no rows)_"
