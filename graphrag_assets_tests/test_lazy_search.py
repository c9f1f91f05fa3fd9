"""Lazy search: best-first over the communities, chunks tested by the model up to a budget."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets_testkit.graphrag_responder import lazy_relevant
from graphrag_assets_testkit.projects import query_db

QUESTION = "Who is the keeper of the Kestrel Point Lighthouse?"


def ask(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["query", QUESTION, "--method", "lazy", "--root", str(root), *args])
    return result.exit_code, result.output


def answer(root: Path, *args: str) -> dict:
    code, output = ask(root, "--json", *args)
    assert code == 0, output
    return json.loads(output[output.index("{") :])


def passages_tested(calls: list[dict]) -> list[str]:
    """The passages the scripted server was asked to test, in order."""
    passages = []
    for call in calls:
        prompt = call["body"]["messages"][-1]["content"]
        if prompt.startswith("Decide which of the numbered passages"):
            block = prompt.split("Passages:", 1)[1].rsplit("Reply with", 1)[0]
            passages += [p for p in block.split("\n\n[") if p.strip()]
    return passages


def test_lazy_search_spends_at_most_its_budget_and_cites_only_relevant_chunks(
    standard_index: Path, graphrag_server
) -> None:
    before = len(graphrag_server.calls("chat"))
    result = answer(standard_index, "--budget", "10")
    calls = graphrag_server.calls("chat")[before:]
    details = result["details"]
    passages = passages_tested(calls)
    assert details["budget"] == 10 and 0 < details["tests_spent"] == len(passages) <= 10
    assert result["llm_used"] and "[Data: Sources" in result["answer"]
    assert result["usage"]["calls_by_purpose"]["query_lazy_test"] == -(-len(passages) // 8)  # batches of 8
    # every chunk in the context passed the (scripted) relevance test; the others are not cited
    sources = result["context_records"]["sources"]
    assert sources and details["relevant_chunks"] >= len(sources)
    for record in sources:
        (text,) = query_db(standard_index, f"select text from text_units where id = '{record['id']}'")[0]
        assert lazy_relevant(QUESTION, text)
    cited = {
        c.strip() for group in result["answer"].split("[Data: Sources (")[1:] for c in group.split(")")[0].split(",")
    }
    assert cited <= {r["citation"] for r in sources}

    assert answer(standard_index, "--budget", "3")["details"]["tests_spent"] == 3


def test_lazy_search_works_offline_on_an_index_without_a_model(nlp_index: Path) -> None:
    result = answer(nlp_index)
    assert not result["llm_used"] and result["method"] == "lazy"
    assert result["details"]["tests_spent"] <= result["details"]["budget"] == 100
    assert "Søren Holm" in result["answer"]
    context = answer(nlp_index, "--budget", "2")["details"]
    assert context["tests_spent"] <= 2


def test_a_budget_is_refused_when_it_cannot_apply(nlp_index: Path) -> None:
    code, output = ask(nlp_index, "--budget", "0")
    assert code != 0 and "a budget is a positive number of chunks" in output and "Traceback" not in output
    result = CliRunner().invoke(
        main, ["query", QUESTION, "--method", "local", "--budget", "5", "--root", str(nlp_index)]
    )
    assert result.exit_code != 0 and "used by --method lazy only" in result.output


def test_on_an_index_built_without_a_model_lazy_search_still_asks_the_model(
    nlp_index: Path, graphrag_server, tmp_path: Path
) -> None:
    """Its point: a model-free (nlp) index, and the model spent per question."""
    import shutil

    import yaml

    root = tmp_path / "nlp"
    shutil.copytree(nlp_index, root)
    settings = yaml.safe_load((root / "graphrag.yaml").read_text())
    settings["llm"] = {**settings.get("llm", {}), "base_url": graphrag_server.base_url, "api_key": "sk-test"}
    (root / "graphrag.yaml").write_text(yaml.safe_dump(settings))
    result = answer(root, "--budget", "8")
    assert result["llm_used"] and result["details"]["tests_spent"] <= 8
    assert result["usage"]["calls_by_purpose"].get("query_lazy_test", 0) >= 1
    basic = CliRunner().invoke(main, ["query", QUESTION, "-m", "basic", "--root", str(root), "--json"])
    assert basic.exit_code == 0 and json.loads(basic.output[basic.output.index("{") :])["llm_used"] is False
