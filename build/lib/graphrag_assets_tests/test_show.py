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
