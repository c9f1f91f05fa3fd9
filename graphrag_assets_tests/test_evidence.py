"""The weak-evidence signal: a question the index knows nothing about is said to be so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.query.evidence import assess

CONTEXT = "Søren Holm, harbour master of Vellmouth, closed the Greywater Channel when Storm Odile arrived."


def test_terms_missing_from_the_context_make_weak_evidence() -> None:
    off_topic = assess("What is the capital of France?", CONTEXT, "basic")
    assert off_topic.weak and off_topic.score == 0.0 and off_topic.missing == ["capital", "france"]
    on_topic = assess("Who is Søren Holm, and what did he close?", CONTEXT, "basic")
    assert not on_topic.weak and on_topic.found == ["holm", "søren"] and on_topic.missing == ["close"]
    assert not assess("What are the storms called?", CONTEXT, "local").weak  # a plural matches its singular


def test_global_search_is_never_flagged_and_a_question_of_function_words_is_not_weak() -> None:
    assert not assess("What are the main themes?", CONTEXT, "global").weak
    assert assess("What is it?", CONTEXT, "basic").score == 1.0


@pytest.mark.parametrize("method", ["basic", "local", "drift"])
def test_the_cli_says_when_the_index_holds_nothing_about_the_question(nlp_index: Path, method: str) -> None:
    def ask(question: str) -> dict:
        done = CliRunner().invoke(main, ["query", question, "--method", method, "--root", str(nlp_index), "--json"])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)

    france = ask("What is the capital of France?")
    assert france["details"]["evidence"]["weak"] and france["details"]["evidence"]["score"] == 0.0
    assert any("little in the index matches this question" in w for w in france["warnings"])
    holm = ask("Who is Søren Holm, and what did he do during Storm Odile?")
    assert not holm["details"]["evidence"]["weak"] and holm["details"]["evidence"]["score"] >= 0.5
    assert not any("little in the index" in w for w in holm["warnings"])
