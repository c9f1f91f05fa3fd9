"""`graphrag-assets show …` on the offline index of the sample corpus."""

import json
from pathlib import Path

from click.testing import CliRunner

from graphrag_assets.cli.main import main


def show(index: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["show", *args, "--root", str(index)])
    return result.exit_code, result.output


def test_lists_filter_by_text_and_level(nlp_index: Path) -> None:
    code, out = show(nlp_index, "entities", "--search", "holm", "--json")
    assert code == 0 and [row["title"] for row in json.loads(out)] == ["SØREN HOLM", "HOLM"]
    code, out = show(nlp_index, "communities", "--level", "0", "--json")
    levels = {row["level"] for row in json.loads(out)}
    assert code == 0 and levels == {0}
    code, out = show(nlp_index, "reports", "--limit", "2", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 2 and rows[0]["rank"] >= rows[1]["rank"]
    code, out = show(nlp_index, "entities", "--limit", "3")
    assert code == 0 and "SØREN HOLM" in out


def test_an_entity_with_its_relationships_communities_and_sources(nlp_index: Path) -> None:
    code, out = show(nlp_index, "entity", "søren holm")
    assert code == 0 and out.startswith("SØREN HOLM (NOUN PHRASE, ")
    assert "relationships (strongest first):\n  " in out and "communities:\n  level 0: community " in out
    assert "sources:\n  " in out and "storm_odile_incident_report.md" in out
    code, out = show(nlp_index, "entity", "soren holm")
    assert code == 1 and "there is no entity named 'soren holm'; did you mean 'SØREN HOLM'?" in out


def test_a_report_by_community_number(nlp_index: Path) -> None:
    code, out = show(nlp_index, "report", "0", "--json")
    detail = json.loads(out)
    assert code == 0 and detail["community"] == 0 and detail["full_content"].startswith("# ")
    code, out = show(nlp_index, "report", "99999")
    assert code == 1 and "there is no report for community 99999" in out


def test_the_readme_usage_query_works_on_an_offline_index(nlp_index: Path) -> None:
    query = "select purpose, sum(requests), sum(cache_hits), sum(prompt_tokens) from llm_usage group by 1"
    result = CliRunner().invoke(main, ["sql", query, "--root", str(nlp_index), "--json"])
    assert result.exit_code == 0 and json.loads(result.output) == []


def test_status_says_pending_input_changes_are_not_in_the_graph_yet(nlp_index: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    (root / "data" / "input" / "letter_holm_to_varga.txt").write_text("A different letter.", encoding="utf-8")
    result = CliRunner().invoke(main, ["status", "--root", str(root)])
    assert "  changed  letter_holm_to_varga.txt" in result.output
    assert (
        "corpus graph: up to date with the indexed documents; 'graphrag-assets index' adds the input changes above"
        in result.output
    )
