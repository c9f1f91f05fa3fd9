"""``export --format html``: the view's data and page, and the page opened in a real headless Chromium.

The layout checks run on a hand-made hierarchy; the browser test exports the standard index with
the CLI, opens the file in Debian's Chromium (started by the ``chromium`` fixture), counts the SVG
elements drawn against DuckDB, clicks a community and searches an entity, and saves screenshots
in the test's tmp folder. Every request the page makes is recorded: it must fetch nothing.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core import schemas
from graphrag_assets.interop.graph_view.data import view_data
from graphrag_assets.interop.graph_view.page import asset_text, render_page
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.graph_fixtures import assert_markdown_drawn


def frame(schema: dict, rows: list[dict]) -> pl.DataFrame:
    return schemas.conform(pl.DataFrame(rows, schema={k: schema[k] for k in rows[0]}), schema)


def small_tables() -> dict[str, pl.DataFrame]:
    names = "ABCDEF"
    entities = frame(
        schemas.ENTITIES,
        [
            {
                "id": f"e{n}",
                "human_readable_id": i,
                "title": n,
                "type": "PERSON",
                "description": f"about {n}",
                "degree": 1,
            }
            for i, n in enumerate(names)
        ],
    )
    relationships = frame(
        schemas.RELATIONSHIPS,
        [
            {"id": "r0", "human_readable_id": 0, "source": "A", "target": "B", "weight": 2.0},
            {"id": "r1", "human_readable_id": 1, "source": "C", "target": "D", "weight": 1.0},
            {"id": "r2", "human_readable_id": 2, "source": "B", "target": "C", "weight": 1.0},
            {"id": "r3", "human_readable_id": 3, "source": "A", "target": "GHOST", "weight": 1.0},
        ],
    )
    communities = frame(
        schemas.COMMUNITIES,
        [
            {
                "id": "c0",
                "community": 0,
                "level": 0,
                "parent": -1,
                "entity_ids": ["eA", "eB", "eC", "eD"],
                "title": "Community 0",
            },
            {"id": "c3", "community": 3, "level": 0, "parent": -1, "entity_ids": ["eE"], "title": "Community 3"},
            {"id": "c1", "community": 1, "level": 1, "parent": 0, "entity_ids": ["eA", "eB"], "title": "Community 1"},
            {"id": "c2", "community": 2, "level": 1, "parent": 0, "entity_ids": ["eC", "eD"], "title": "Community 2"},
        ],
    )
    reports = frame(
        schemas.COMMUNITY_REPORTS,
        [
            {
                "id": "p0",
                "community": 0,
                "level": 0,
                "title": "Report </script><script>alert(1)</script>",
                "rank": 5.0,
                "full_content": "# Zero\n<b>not html</b>",
                "summary": "s",
            },
        ],
    )
    return {
        "entities": entities,
        "relationships": relationships,
        "communities": communities,
        "community_reports": reports,
    }


def test_communities_nest_and_are_sized_by_members() -> None:
    data = view_data(small_tables(), "t")
    c = {row["community"]: row for row in data["communities"]}
    assert [c[n]["size"] for n in (0, 1, 2, 3)] == [4, 2, 2, 1]
    for child, parent in ((1, 0), (2, 0)):
        gap = math.hypot(c[child]["x"] - c[parent]["x"], c[child]["y"] - c[parent]["y"])
        assert gap + c[child]["r"] <= c[parent]["r"] + 1e-3
    assert c[0]["r"] ** 2 / c[3]["r"] ** 2 == pytest.approx(4, rel=0.01)  # area ~ members
    assert c[1]["r"] == pytest.approx(c[2]["r"], abs=1e-3)
    assert all(math.hypot(row["x"], row["y"]) + row["r"] <= 1 + 1e-3 for row in data["communities"])
    assert data["entities"]["community"] == [1, 1, 2, 2, 3, -1]  # deepest community; F is in none
    assert data["relationships"] == [[0, 1, 2.0], [2, 3, 1.0], [1, 2, 1.0]]  # GHOST is no entity


def test_a_community_is_drawn_as_its_children_placed_in_their_circles() -> None:
    data = view_data(small_tables(), "t")
    c = {row["community"]: row for row in data["communities"]}
    parent = c[0]
    for child in (c[1], c[2]):
        ox, oy = (child["x"] - parent["x"]) / parent["r"], (child["y"] - parent["y"]) / parent["r"]
        scale = child["r"] / parent["r"]
        for i, entity in enumerate(child["members"]):
            j = parent["members"].index(entity)
            x, y = child["layout"][2 * i], child["layout"][2 * i + 1]
            assert parent["layout"][2 * j] == pytest.approx(ox + scale * x, abs=2e-4)
            assert parent["layout"][2 * j + 1] == pytest.approx(oy + scale * y, abs=2e-4)
    for row in data["communities"]:
        points = list(zip(row["layout"][::2], row["layout"][1::2]))
        assert len(points) == row["size"] and all(math.hypot(x, y) <= 1 for x, y in points)
    leaf = c[1]["layout"]
    assert math.hypot(leaf[0] - leaf[2], leaf[1] - leaf[3]) > 0.5  # two members are spread apart
    assert view_data(small_tables(), "t") == data  # deterministic


def test_page_inlines_everything_and_cannot_be_broken_by_data() -> None:
    data = view_data(small_tables(), "Harbour <graph>")
    page = render_page(data)
    assert "<title>Harbour &lt;graph&gt;</title>" in page
    assert "</script><script>alert" not in page and "<b>not html</b>" not in page
    embedded = re.search(r'<script type="application/json" id="graph-view-data">(.*?)</script>', page, re.S).group(1)
    assert json.loads(embedded) == data
    assert asset_text("view.js") in page and asset_text("view.css") in page
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)  # nothing to fetch
    with pytest.raises(ValueError):
        asset_text("../cypher.py")


# --- in a real browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def html_export(standard_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "export"
    result = CliRunner().invoke(
        main, ["export", str(out), "--format", "html", "--root", str(standard_index)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "graph.html" in result.output
    return out / "graph.html"


def visible_inside(page, selector: str, container: str) -> bool:
    return page.evaluate(
        """([selector, container]) => {
            const box = document.querySelector(container).getBoundingClientRect();
            return [...document.querySelectorAll(selector)].every(n => {
                const r = n.getBoundingClientRect();
                return r.width > 0 && r.height > 0 && r.right > box.left && r.left < box.right
                    && r.bottom > box.top && r.top < box.bottom;
            });
        }""",
        [selector, container],
    )


def test_the_page_draws_in_chromium(html_export: Path, standard_index: Path, chromium, tmp_path: Path) -> None:
    root = standard_index
    with chromium.connect() as browser:
        page = browser.contexts[0].new_page()
        requests: list[str] = []
        errors: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.set_viewport_size({"width": 1400, "height": 900})
        try:
            page.goto(html_export.as_uri())
            page.wait_for_selector("#community-map circle.community")
            (communities,) = query_db(root, "select count(*) from communities")[0]
            assert page.locator("#community-map circle.community").count() == communities
            assert visible_inside(page, "#community-map circle.community", "#community-map")

            # the largest top-level community is open: its members, the relationships among them, its report
            first, size, title = query_db(
                root,
                """
                select c.community, c.size, r.title from communities c join community_reports r using (community)
                where c.level = 0 order by c.size desc, c.community limit 1""",
            )[0]
            (inner,) = query_db(
                root,
                f"""
                select count(*) from relationships r join entities s on s.title = r.source join entities t on t.title = r.target
                where list_contains((select entity_ids from communities where community = {first}), s.id)
                  and list_contains((select entity_ids from communities where community = {first}), t.id)""",
            )[0]
            assert page.locator("#entity-graph circle.entity").count() == size > 3
            assert page.locator("#entity-graph line.relationship").count() == inner > 0
            assert visible_inside(page, "#entity-graph circle.entity", "#entity-graph")
            assert page.locator("#report-title").text_content() == title
            # entity labels neither cover each other nor run past the drawing
            boxes = page.evaluate(LABEL_BOXES)
            assert len(boxes) >= 3
            assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if overlap(a, b)]
            assert all(-1.05 - 1e-6 <= x and x + w <= 1.05 + 1e-6 for x, _, w, _ in boxes)
            # the report's markdown is drawn: headings and lists as elements, no raw "#" or "**"
            (content,) = query_db(root, f"select full_content from community_reports where community = {first}")[0]
            assert_markdown_drawn(page, "#report-text", content, title)
            page.screenshot(path=str(tmp_path / "graph-view.png"))

            # bigger-degree entities are drawn bigger; the wheel zooms the map, a double click resets it
            drawn = page.evaluate("""() => {
                const data = JSON.parse(document.getElementById('graph-view-data').textContent);
                return [...document.querySelectorAll('#entity-graph circle.entity')]
                    .map(n => [data.entities.degree[Number(n.dataset.entity)], Number(n.getAttribute('r'))]);
            }""")
            by_degree = [r for _, r in sorted(drawn)]
            assert by_degree == sorted(by_degree) and by_degree[0] < by_degree[-1]
            before = page.get_attribute("#community-map", "viewBox")
            page.mouse.move(200, 400)
            page.mouse.wheel(0, -300)
            page.wait_for_function(
                "b => document.querySelector('#community-map').getAttribute('viewBox') !== b", arg=before
            )
            page.dblclick("#community-map", position={"x": 5, "y": 5})
            assert page.get_attribute("#community-map", "viewBox") == before

            # a click on the largest deepest community opens it, with its chain of parents
            leaf, leaf_level, leaf_size, leaf_title = query_db(
                root,
                """
                select c.community, c.level, c.size, r.title from communities c join community_reports r using (community)
                where c.level = (select max(level) from communities) order by c.size desc, c.community limit 1""",
            )[0]
            assert leaf_level >= 1
            page.locator(f'#community-map circle.community[data-community="{leaf}"]').click()
            assert page.locator(f'#community-map circle.community.selected[data-community="{leaf}"]').count() == 1
            assert page.locator("#entity-graph circle.entity").count() == leaf_size
            assert page.locator("#report-title").text_content() == leaf_title
            assert page.locator("#breadcrumb button").count() == leaf_level + 1

            # search: part of a name, pick it, its deepest community opens with the entity selected
            name, deepest = query_db(
                root,
                f"""
                select e.title, arg_max(c.community, c.level) from entities e
                join (select community, level, unnest(entity_ids) as id from communities) c on c.id = e.id
                where c.community <> {leaf:d} group by e.title, e.degree order by e.degree desc, e.title limit 1""",
            )[0]
            page.fill("#entity-search", name[1:-1].lower())
            page.locator("#search-results button.search-result", has_text=name).first.click()
            assert page.locator("#entity-info strong").text_content() == name
            selected = page.locator("#entity-graph circle.entity.selected")
            assert selected.count() == 1
            assert page.locator(f'#community-map circle.community.selected[data-community="{deepest}"]').count() == 1
            page.screenshot(path=str(tmp_path / "graph-view-search.png"))
        finally:
            page.close()
    assert not errors
    assert requests and all(url.startswith(("file:", "data:", "about:")) for url in requests), requests
    assert (tmp_path / "graph-view.png").stat().st_size > 10_000


LABEL_BOXES = """() => [...document.querySelectorAll('#entity-graph .gv-labels text')].map(t => {
    const b = t.getBBox(); return [b.x, b.y, b.width, b.height]; })"""


def overlap(a: list[float], b: list[float]) -> bool:
    """Whether two boxes (x, y, width, height) share any area."""
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
