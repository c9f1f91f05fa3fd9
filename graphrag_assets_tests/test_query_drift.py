"""DRIFT search: HyDE report choice, primer folds, follow-up rounds and their selection, reduce input."""

from __future__ import annotations

import asyncio
import json

import pytest

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.query.drift_search import NO_LLM_FALLBACK, drift_search, split_folds
from graphrag_assets_tests.test_query_local import REPORT_TEXT, TU, ScriptedChat, ScriptedEmbedder, make_index, request

QUESTION = "What is the story?"


def answer(text: str, score: int, follow_ups: list[str], key: str = "response") -> str:
    return json.dumps({key: text, "score": score, "follow_up_queries": follow_ups})


def primer(messages) -> str:
    prompt = messages[0]["content"]
    if REPORT_TEXT[1] in prompt:  # fold 1 holds reports 1 and 2
        return answer(
            "P1 from reports one and two [Data: Reports (1, 2)]", 60, ["fa", "fb", "fc"], "intermediate_answer"
        )
    return answer("P2 from report zero [Data: Reports (0)]", 80, ["fd"], "intermediate_answer")


LOCAL_ANSWERS = {
    "fd": answer("Ld", 10, ["ge"]),
    "fa": answer("La", 90, ["gf", "FB", QUESTION]),  # a repeat (any case) and the question itself are not asked again
    "gf": answer("Lgf", 5, ["hh"]),
    "fb": answer("Lfb", 50, []),
    "fc": "plain text, not JSON",
}


def make_chat() -> ScriptedChat:
    return ScriptedChat(
        {
            "query_drift_hyde": "HYPOTHETICAL REPORT",
            "query_drift_primer": primer,
            "query_drift_local": lambda m: LOCAL_ANSWERS[m[1]["content"]],
            "query_drift_reduce": "final drift answer",
        }
    )


def run(chat, **drift):
    options = {"primer_folds": 2, "k_followups": 3, "n_depth": 2, "max_followups_per_depth": 2, **drift}
    settings = QuerySettings.model_validate({"drift": options, "local": {"top_k_entities": 3, "ranking": "msgraphrag"}})
    embedder = ScriptedEmbedder({"HYPOTHETICAL REPORT": [0.0, 1.0, 0.0, 0.0]})
    result = asyncio.run(drift_search(request(QUESTION, make_index(), chat, embedder, settings)))
    return result, embedder


def test_split_folds_like_array_split():
    assert split_folds([1, 2, 3, 4, 5], 2) == [[1, 2, 3], [4, 5]]
    assert split_folds([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5], [6, 7]]
    assert split_folds([1, 2], 5) == [[1], [2]]
    assert split_folds([], 3) == []


def test_primer_uses_the_top_ranked_report_as_template_and_the_hypothetical_answer_to_pick_reports():
    chat = make_chat()
    result, embedder = run(chat, n_depth=0)
    hyde = chat.calls_for("query_drift_hyde")[0].messages[0]["content"]
    assert REPORT_TEXT[1] in hyde and QUESTION in hyde  # report 1 has the highest rank (9)
    assert embedder.texts[0] == "HYPOTHETICAL REPORT"
    # similarity to (0, 1, 0, 0): report 1, then 2, then 0; two folds
    assert result.details["primer"]["reports"] == ["1", "2", "0"]
    assert result.details["primer"]["folds"] == [["1", "2"], ["0"]]
    assert result.details["primer"]["scores"] == [60, 80]
    assert all(c.json_mode for c in chat.calls_for("query_drift_primer"))
    assert result.context_records.citations("reports") == ["1", "2", "0"]


def test_depth_zero_is_primer_and_reduce_only():
    chat = make_chat()
    result, _ = run(chat, n_depth=0)
    assert chat.purposes() == ["query_drift_hyde", "query_drift_primer", "query_drift_primer", "query_drift_reduce"]
    reduce_system = chat.calls_for("query_drift_reduce")[0].messages[0]["content"]
    assert "P1 from reports one and two" in reduce_system and "P2 from report zero" in reduce_system
    assert result.answer == "final drift answer"
    assert result.details["rounds"] == []


def test_follow_up_rounds_respect_depth_and_pick_by_parent_score():
    chat = make_chat()
    result, _ = run(chat)
    # round 1: fd (parent score 80) then fa (60, asked first of the 60s); round 2: gf (90) then fb (60)
    assert result.details["rounds"] == [
        {"depth": 1, "queries": ["fd", "fa"]},
        {"depth": 2, "queries": ["gf", "fb"]},
    ]
    local_calls = chat.calls_for("query_drift_local")
    assert len(local_calls) == 4
    assert all(c.json_mode and not c.use_cache for c in local_calls)
    # each follow-up is a local search whose prompt also carries the global question
    assert all(
        QUESTION in c.messages[0]["content"] and "-----Sources-----" in c.messages[0]["content"] for c in local_calls
    )
    unanswered = [a["query"] for a in result.details["actions"] if not a["answered"]]
    assert unanswered == ["fc", "ge", "hh"]  # the pool left after two rounds; no repeats asked
    assert [a["query"] for a in result.details["actions"]].count("fb") == 1


def test_reduce_sees_every_intermediate_answer_in_order():
    chat = make_chat()
    result, _ = run(chat)
    reduce_call = chat.calls_for("query_drift_reduce")[0]
    system = reduce_call.messages[0]["content"]
    order = ["P1 from", "P2 from", "\nLd", "\nLa", "\nLgf", "\nLfb"]
    positions = [system.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert result.details["intermediate_answers"] == 6
    assert result.context_text in system
    assert reduce_call.messages[1]["content"] == QUESTION
    assert not reduce_call.use_cache
    # local contexts add their sources; with DRIFT's split (90% sources, 10% reports) entities get no room
    assert result.context_records.citations("sources")[:2] == [short_id(TU[3]), short_id(TU[2])]
    assert result.context_records.citations("entities") == []
    assert result.usage.chat_calls == 1 + 2 + 4 + 1
    assert json.loads(json.dumps(result.to_dict()))["details"]["rounds"][1]["queries"] == ["gf", "fb"]


def test_follow_up_limit_per_depth_and_unreadable_answers():
    chat = make_chat()
    result, _ = run(chat, n_depth=1, max_followups_per_depth=3)
    assert result.details["rounds"] == [{"depth": 1, "queries": ["fd", "fa", "fb"]}]
    chat = make_chat()
    result, _ = run(chat, n_depth=1, max_followups_per_depth=5)
    assert result.details["rounds"][0]["queries"] == ["fd", "fa", "fb", "fc"]
    assert any("'fc'" in w and "not the expected JSON" in w for w in result.warnings)
    assert "plain text, not JSON" in chat.calls_for("query_drift_reduce")[0].messages[0]["content"]


def test_drift_without_llm_falls_back_to_local_search():
    from graphrag_assets.query.extractive import HEADER

    result = asyncio.run(drift_search(request(QUESTION, make_index(), None, ScriptedEmbedder(), QuerySettings())))
    assert result.method == "drift" and result.llm_used is False
    assert result.answer.startswith(NO_LLM_FALLBACK)
    assert HEADER in result.answer
    assert result.warnings[0] == NO_LLM_FALLBACK
    assert result.context_records.citations("sources")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"response": "r", "score": 55, "follow_up_queries": ["a", " a ", "b", 3]}', ("r", 55, ("a", "b"))),
        ('Here you go: {"response": "r", "score": "40"}', ("r", 40, ())),
        ('{"response": ["line 1", "line 2"], "follow_up_queries": "not a list"}', ("line 1\nline 2", 0, ())),
        ('{"intermediate_answer": "wrong key"}', None),
        ("just prose", None),
    ],
)
def test_parse_drift_answer(text, expected):
    from graphrag_assets.query.json_answers import parse_drift_answer

    parsed = parse_drift_answer(text, "response")
    assert (None if parsed is None else (parsed.answer, parsed.score, parsed.follow_up_queries)) == expected
