"""The page at ``/`` of ``graphrag-assets serve``, in a real headless Chromium (Debian's, started by
the ``chromium`` fixture) against the real server process.

It logs in with the API key, asks a question and watches the answer stream in (the scripted model
server streams it word by word), clicks citations and checks what opens against DuckDB, browses the
communities of a level, opens one on the community map (the graph view of ``export --format html``)
and draws an entity's neighbourhood. Screenshots go to the test's tmp folder; every request the
page makes must go to the server itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.graph_fixtures import assert_markdown_drawn
from graphrag_assets_tests.serve_process import ServeProcess, serving_two_projects

KEY = "page-test-key-90d2"
QUESTION = "Who is Søren Holm and what happened during Storm Odile?"


@pytest.fixture(scope="module")
def server(standard_index: Path, nlp_index: Path, tmp_path_factory: pytest.TempPathFactory):
    with serving_two_projects(standard_index, nlp_index, tmp_path_factory.mktemp("served-page"), KEY) as process:
        yield process


WATCH_ANSWER = """() => {
    window.answerLengths = [];
    const answer = document.getElementById('answer');
    new MutationObserver(() => {
        if (!answer.hasAttribute('data-done')) window.answerLengths.push(answer.textContent.length);
    }).observe(answer, {childList: true, subtree: true, characterData: true});
}"""

REFERENCE_LISTS = """() => [...document.querySelectorAll('#references ul.records')].map(u => [
    u.dataset.kind, u.children.length, [...u.children].filter(li => !li.hidden).length,
    u.querySelectorAll('.tag.cited').length])"""


def test_ask_cite_browse_and_draw_in_chromium(
    server: ServeProcess, standard_index: Path, graphrag_server, chromium, tmp_path: Path
) -> None:
    root = standard_index
    graphrag_server.reset()
    graphrag_server.set_chunk_delay(30)  # the model writes its answer piece by piece
    with chromium.connect() as browser:
        context = browser.contexts[0]
        context.clear_cookies()
        page = context.new_page()
        requests: list[str] = []
        errors: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.set_viewport_size({"width": 1400, "height": 900})
        try:
            # the key, typed into the login form (a wrong one first)
            page.goto(server.url + "/")
            assert page.url == server.url + "/login"
            page.fill("#key", "not-the-key")
            page.click("button[type=submit]")
            assert "not the server's key" in page.text_content("body")
            page.fill("#key", KEY)
            page.click("button[type=submit]")
            page.wait_for_selector("#ask-form")
            assert page.url == server.url + "/"
            page.locator(
                "#build", has_text="harbour"
            ).wait_for()  # a locator: the page's CSP forbids evaluating strings

            # ask: the answer streams in, then the references arrive
            page.evaluate(WATCH_ANSWER)
            page.fill("#question", QUESTION)
            page.select_option("#method", "local")
            page.click("#ask")
            page.wait_for_selector("#answer[data-done]", timeout=60_000)
            answer = page.text_content("#answer")
            assert answer.startswith(f"Answer to: {QUESTION}")
            lengths = page.evaluate("window.answerLengths")
            assert int(page.get_attribute("#answer", "data-chunks")) > 3
            # seen growing, piece by piece (a finished [Data: …] group turns into shorter buttons)
            assert len(set(lengths)) > 10 and lengths[0] < len(answer) / 4 and max(lengths) <= len(answer)
            assert page.locator("#answer .cite").count() >= 2
            assert page.locator("#references .tag.cited").count() >= 2
            # long reference lists stay short: cited ones first, the rest behind an "all N" button
            lists = page.evaluate(REFERENCE_LISTS)
            assert any(total > 8 for _, total, _, _ in lists)
            for kind, total, shown, cited in lists:
                assert shown == min(total, max(8, cited))
                if total > shown:
                    page.click(f'#references button.more[data-kind="{kind}"]')
                    assert page.evaluate(REFERENCE_LISTS) != lists
                    assert [row for row in page.evaluate(REFERENCE_LISTS) if row[0] == kind][0][2] == total
            assert "local search" in page.text_content("#answer-meta")
            page.screenshot(path=str(tmp_path / "1-answer.png"))

            # click citations: the cited report, and the cited source text
            report_cite = page.locator('#answer .cite[data-kind="reports"]').first
            community = int(report_cite.get_attribute("data-ref"))
            report_cite.click()
            (title, content) = query_db(
                root, f"select title, full_content from community_reports where community = {community}"
            )[0]
            page.wait_for_function("t => document.getElementById('detail-title').textContent === t", arg=title)
            assert_markdown_drawn(page, "#detail-text", content, title)  # the report's markdown drawn, not shown raw
            cited_ids = [
                i
                for group in re.findall(r"\[Data:([^\]]*)\]", content)
                for _, ids in re.findall(r"(\w+) \(([^)]*)\)", group)
                for i in ids.split(",")
                if i.strip().isdigit()
            ]
            assert page.locator("#detail-text .cite").count() == len(cited_ids) > 0
            page.screenshot(path=str(tmp_path / "2-cited-report.png"))
            source_cite = page.locator('#answer .cite[data-kind="sources"]').first
            source_ref = source_cite.get_attribute("data-ref")
            source_cite.click()
            (text,) = query_db(root, f"select text from text_units where replace(id, '-', '') like '{source_ref}%'")[0]
            page.wait_for_function(
                "t => document.getElementById('detail-text') && document.getElementById('detail-text').textContent === t",
                arg=text,
            )
            assert page.locator('#answer .cite.active[data-kind="sources"]').count() >= 1

            # communities of a level; one opened, then shown on the community map
            page.click("#tab-communities")
            page.wait_for_selector("#level-buttons button")
            levels = [lvl for (lvl,) in query_db(root, "select distinct level from communities order by level")]
            assert page.locator("#level-buttons button").count() == len(levels) >= 2
            page.click('#level-buttons button[data-level="1"]')
            expected = query_db(
                root,
                "select c.community, r.title from communities c join community_reports r using (community) "
                "where c.level = 1 order by c.size desc, c.community",
            )
            page.wait_for_function(
                "n => document.querySelectorAll('#community-list .community-item').length === n", arg=len(expected)
            )
            first, first_title = expected[0]
            page.click(f'#community-list .community-item[data-community="{first}"]')
            page.wait_for_function("t => document.getElementById('detail-title').textContent === t", arg=first_title)
            page.screenshot(path=str(tmp_path / "3-community.png"))
            page.click("#report-on-map")
            page.wait_for_selector(f'#community-map circle.community.selected[data-community="{first}"]')
            (communities,) = query_db(root, "select count(*) from communities")[0]
            assert page.locator("#community-map circle.community").count() == communities
            # the community's report is shown once: in the detail pane, not again in the graph view
            page.wait_for_function("t => document.getElementById('detail-title').textContent === t", arg=first_title)
            assert page.locator("#report-text").is_hidden() and page.locator("#report-title").is_hidden()
            assert page.get_by_text(first_title, exact=True).filter(visible=True).count() == 1
            (size,) = query_db(root, f"select size from communities where community = {first}")[0]
            assert page.locator("#entity-graph circle.entity").count() == size
            page.screenshot(path=str(tmp_path / "4-community-map.png"))

            # an entity of the answer, and its neighbourhood drawn by the same graph view
            page.click("#tab-ask")
            entity = page.locator('#references button.reference[data-kind="entities"]').first
            hrid = int(entity.get_attribute("data-ref"))
            entity.click()
            (name,) = query_db(root, f"select title from entities where human_readable_id = {hrid}")[0]
            page.wait_for_function("t => document.getElementById('detail-title').textContent === t", arg=name)
            page.click("#entity-graph-button")
            page.wait_for_selector("#graph-view.neighbourhood #entity-graph circle.entity")
            (neighbours,) = query_db(
                root,
                f"""select count(distinct case when source = '{name.replace("'", "''")}' then target else source end)
                from relationships r where source = '{name.replace("'", "''")}' or target = '{name.replace("'", "''")}'""",
            )[0]
            assert page.locator("#entity-graph circle.entity").count() == min(neighbours, 60) + 1
            assert page.text_content("#entity-info strong") == name
            assert page.locator("#entity-graph circle.entity.selected").count() == 1
            assert page.locator("#graph-view.neighbourhood .gv-map").is_hidden()
            page.screenshot(path=str(tmp_path / "5-neighbourhood.png"))

            # the other project, by the selector
            page.select_option("#project", "offline")
            page.wait_for_url(server.url + "/p/offline/")
            page.locator("#build", has_text=re.compile(r"^\s*offline")).wait_for()
        finally:
            page.close()
            graphrag_server.reset()
    assert not errors, errors
    assert requests and all(url.startswith((server.url + "/", "data:")) for url in requests), sorted(set(requests))
    for shot in ("1-answer.png", "3-community.png", "4-community-map.png", "5-neighbourhood.png"):
        assert (tmp_path / shot).stat().st_size > 20_000
