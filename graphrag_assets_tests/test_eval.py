"""``graphrag-assets eval`` and the Dagster ``eval_job``: a question set asked with each method."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets.project.evaluation import (
    contains_answer,
    percentile,
    read_questions,
    retrieval_scores,
)

SAMPLE_QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "eval" / "sample_questions.jsonl"


def run_eval(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["eval", *args])
    return result.exit_code, result.output


def test_questions_are_read_from_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(
        '{"question": "Who?", "answers": ["Ann", "Anne"], "sources": ["a.txt"]}\n{"question": "When?", "answer": "1887"}\n'
    )
    csv = tmp_path / "q.csv"
    csv.write_text('question,answer,sources\nWho?,Ann,a.txt; b.txt\n"When, then?",,\n')
    first, second = read_questions(jsonl)
    assert first.answers == ("Ann", "Anne") and first.sources == ("a.txt",) and second.answers == ("1887",)
    who, when = read_questions(csv)
    assert who.sources == ("a.txt", "b.txt") and when.question == "When, then?" and when.answers == ()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("q.jsonl", '{"query": "Who?"}\n', "has no 'question' column"),
        ("q.csv", "question\n", "holds no question"),
        ("q.txt", "Who?\n", "neither .jsonl nor .csv"),
        ("q.jsonl", "{not json\n", "could not be read"),
    ],
)
def test_a_bad_question_file_is_one_clear_error(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        read_questions(path)
    with pytest.raises(UserError, match="does not exist"):
        read_questions(tmp_path / "missing.jsonl")


def test_answers_and_sources_are_matched_after_normalising() -> None:
    assert contains_answer("It was built in 1887, by the harbour board.", ["1887"])
    assert contains_answer("The keeper is SOREN HOLM.", ["Søren Holm"])  # case and accents
    assert not contains_answer("In 18870 nobody knew.", ["1887"])  # whole words only
    assert contains_answer("the Greywater Channel", ["Greywater Channel"])
    assert retrieval_scores(["x.md", "a.txt", "b.txt"], ["A.txt", "c.txt"], 2) == (True, 0.5)
    assert retrieval_scores(["x.md", "y.md", "a.txt"], ["a.txt"], 2) == (False, 0.0)
    assert percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0 and percentile([3.0, 1.0, 2.0, 4.0], 0.95) == 4.0


def test_eval_reports_each_method_on_the_shipped_sample_questions(nlp_index: Path, tmp_path: Path) -> None:
    code, output = run_eval(str(SAMPLE_QUESTIONS), "--root", str(nlp_index), "-m", "local", "-m", "basic", "--json")
    assert code == 0, output
    report = json.loads(output)
    asked = len(SAMPLE_QUESTIONS.read_text().splitlines())
    assert [m["method"] for m in report["methods"]] == ["local", "basic"]
    for method in report["methods"]:
        assert method["questions"] == asked >= 30
        assert method["hit_at_k"] >= 0.5 and 0 < method["recall_at_k"] <= method["hit_at_k"]
        assert method["contains"] >= 0.8 and method["judged"] is None  # offline: no judge
        assert 0 < method["p50_seconds"] <= method["p95_seconds"]
    assert report["methods"][0]["hit_at_k"] >= 0.65  # docs/querying.md: "70% of them"
    first = report["questions"][0]
    assert first["method"] == "local" and len(first["retrieved"]) <= 5 and first["answer"]

    markdown, page = tmp_path / "eval.md", tmp_path / "eval.html"
    code, output = run_eval(str(SAMPLE_QUESTIONS), "--root", str(nlp_index), "-k", "3", "--report", str(markdown))
    assert code == 0, output
    assert "| method" in output and "hit@3" in output and f"report written to {markdown}" in output
    assert markdown.read_text().startswith("| method")
    code, _ = run_eval(str(SAMPLE_QUESTIONS), "--root", str(nlp_index), "-m", "basic", "--report", str(page))
    assert code == 0 and page.read_text().count("<tr>") == asked + 3  # 2 headers, the summary row, the questions
    code, output = run_eval(str(SAMPLE_QUESTIONS), "--root", str(nlp_index), "--report", str(tmp_path / "x.pdf"))
    assert code != 0 and "give a .md or .html file name" in output and "Traceback" not in output


def test_the_judge_is_asked_once_per_answerable_question(standard_index: Path, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"question": "Who is Søren Holm?", "answer": "the lighthouse keeper"}\n{"question": "What is the reef?"}\n'
    )
    code, output = run_eval(str(questions), "--root", str(standard_index), "-m", "basic", "--json")
    assert code == 0, output
    report = json.loads(output)
    judge = report["judge_usage"]
    assert judge["requests"] + judge["cache_hits"] == 1  # only the question with an expected answer
    judged = [q["judged"] for q in report["questions"]]
    assert isinstance(judged[0], bool) and judged[1] is None
    code, output = run_eval(str(questions), "--root", str(standard_index), "-m", "basic", "--no-judge", "--json")
    assert json.loads(output)["judge_usage"] is None


def test_eval_job_records_each_methods_figures_as_run_metadata(nlp_index: Path) -> None:
    defs = build_definitions(nlp_index)
    config = {"questions": str(SAMPLE_QUESTIONS), "methods": ["local"], "k": 5}
    result = defs.resolve_job_def("eval_job").execute_in_process(
        run_config={"ops": {"evaluate_questions": {"config": config}}}, instance=open_instance(load_settings(nlp_index))
    )
    assert result.success
    outputs = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = outputs[0].event_specific_data.metadata
    assert metadata["local/hit_at_k"].value >= 0.5 and "| local" in metadata["summary"].value
