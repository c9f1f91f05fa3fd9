"""Global search: report selection (roll-up, dynamic), batching, map/reduce filtering, no-LLM mode.

Token counts are words. The community tree used throughout::

    level 0:  c0 {e1..e5}                 c1 {e7, e8}
    level 1:  c2 {e1, e2, e3}  c3 {e4, e5}
    level 2:  c4 {e1, e2}  c5 {e3}
"""

from __future__ import annotations

import asyncio
import json
import math
import re

import polars as pl
import pytest

from graphrag_assets.core.ids import entity_id, stable_uuid
from graphrag_assets.core.schemas import COMMUNITIES, COMMUNITY_REPORTS, ENTITIES, conform
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.global_search import (
    NO_DATA_ANSWER,
    ScoredPoint,
    build_map_batches,
    global_search,
    occurrence_weights,
    reduce_data,
    reports_at_level,
)
from graphrag_assets.query.json_answers import MapPoint
from graphrag_assets.query.query_data import QueryData
from graphrag_assets_tests.test_query_local import ScriptedChat, ScriptedEmbedder, filler, request, words

TREE = {  # community: (level, parent, children, entity numbers)
    0: (0, -1, [2, 3], [1, 2, 3, 4, 5]),
    1: (0, -1, [], [7, 8]),
    2: (1, 0, [4, 5], [1, 2, 3]),
    3: (1, 0, [], [4, 5]),
    4: (2, 2, [], [1, 2]),
    5: (2, 2, [], [3]),
}
RANKS = {0: 6.0, 1: 2.0, 2: 7.0, 3: 5.0, 4: 9.0, 5: 1.0}


def report_id(c: int) -> str:
    return stable_uuid("report", c)


def make_data(
    content_words: int = 20, without_report: tuple[int, ...] = (), row_order: list[int] | None = None
) -> QueryData:
    names = [f"E{i}" for i in range(1, 9)]
    entities = conform(
        pl.DataFrame(
            {
                "id": [entity_id(n) for n in names],
                "human_readable_id": list(range(8)),
                "title": names,
                # e1 is mentioned in 3 text units, the others in 1 (occurrence weights)
                "text_unit_ids": [["t1", "t2", "t3"]] + [[f"t{i + 10}"] for i in range(7)],
            }
        ),
        ENTITIES,
    )
    communities = conform(
        pl.DataFrame(
            {
                "id": [stable_uuid("community", c) for c in TREE],
                "human_readable_id": list(TREE),
                "community": list(TREE),
                "level": [v[0] for v in TREE.values()],
                "parent": [v[1] for v in TREE.values()],
                "children": [v[2] for v in TREE.values()],
                "title": [f"Community {c}" for c in TREE],
                "entity_ids": [[entity_id(f"E{i}") for i in v[3]] for v in TREE.values()],
            },
            schema_overrides={"children": pl.List(pl.Int64)},
        ),
        COMMUNITIES,
    )
    kept = [c for c in (row_order or list(TREE)) if c not in without_report]
    reports = conform(
        pl.DataFrame(
            {
                "id": [report_id(c) for c in kept],
                "human_readable_id": kept,
                "community": kept,
                "level": [TREE[c][0] for c in kept],
                "parent": [TREE[c][1] for c in kept],
                "children": [TREE[c][2] for c in kept],
                "title": [f"Report{c}" for c in kept],
                "summary": [f"summary of {c}" for c in kept],
                "full_content": [f"TOPIC{c} " + filler(f"c{c}w", content_words - 1) for c in kept],
                "rank": [RANKS[c] for c in kept],
            },
            schema_overrides={"children": pl.List(pl.Int64)},
        ),
        COMMUNITY_REPORTS,
    )
    # report vectors: similarity to the query (1, 0) is highest for c3, then c1 and c4 (a tie), ...
    angles = {0: 0.9, 1: 0.2, 2: 0.5, 3: 0.0, 4: 0.2, 5: 1.2}
    index = ArrayVectorIndex([report_id(c) for c in kept], [[math.cos(angles[c]), math.sin(angles[c])] for c in kept])
    return QueryData(
        entities=entities, communities=communities, community_reports=reports, community_full_content=index
    )


def settings(**global_) -> QuerySettings:
    return QuerySettings.model_validate({"global": global_})


def topics(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"TOPIC(\d+)", text)]


def search(chat, data=None, embedder=None, options=None, **kwargs):
    return asyncio.run(
        global_search(request("What happened?", data or make_data(), chat, embedder, options or settings(), **kwargs))
    )


# --- report selection ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "roll_up", "expected"),
    [
        (0, True, [0, 1]),
        (1, True, [1, 2, 3]),  # c0's entities all live deeper: c0 is rolled up into c2 and c3
        (1, False, [0, 1, 2, 3]),  # Microsoft's effective behaviour (quirk Q6)
        (2, True, [1, 3, 4, 5]),
        (2, False, [0, 1, 2, 3, 4, 5]),
        (5, True, [1, 3, 4, 5]),
    ],
)
def test_reports_at_level_roll_up(level, roll_up, expected):
    data = make_data()
    chosen = reports_at_level(data.communities, data.community_reports, level, roll_up=roll_up)
    assert chosen["community"].to_list() == expected


def test_roll_up_falls_back_to_the_deepest_community_that_has_a_report():
    data = make_data(without_report=(5,))
    chosen = reports_at_level(data.communities, data.community_reports, 2)
    assert chosen["community"].to_list() == [1, 2, 3, 4]  # e3's deepest report is c2's


def test_occurrence_weights():
    data = make_data()
    # c0: e1 (3 units) + e2..e5 (1 each) = 7; c1: 2; c2: 5; c4: 4 -> divided by 7
    assert occurrence_weights(data.communities, data.entities, [0, 1, 2, 4]) == {0: 1.0, 1: 2 / 7, 2: 5 / 7, 4: 4 / 7}


# --- batching ------------------------------------------------------------------------------------


def test_batches_respect_max_context_tokens_and_are_deterministic():
    data = make_data(content_words=150)
    reports = reports_at_level(data.communities, data.community_reports, 2, roll_up=False)
    weights = occurrence_weights(data.communities, data.entities, reports["community"].to_list())
    batches, too_large = build_map_batches(reports, weights, seed=86, max_tokens=500, count=words)
    assert too_large == []
    assert len(batches) == 2  # rows of ~153 words: three per 500-token table
    for batch in batches:
        assert words(batch.text) <= 500
        assert batch.text.startswith("-----Reports-----\nid|title|occurrence weight|content|rank\n")
        # each batch is listed by occurrence weight, then rank
        listed = [int(c) for c in batch.report_citations]
        keys = [(-weights[c], -RANKS[c]) for c in listed]
        assert keys == sorted(keys)
        assert topics(batch.text) == listed
    assert sorted(int(c) for b in batches for c in b.report_citations) == [0, 1, 2, 3, 4, 5]
    # the same seed gives the same batches whatever the table order; another seed may differ
    shuffled = make_data(content_words=150, row_order=[5, 3, 1, 0, 4, 2])
    again, _ = build_map_batches(
        reports_at_level(shuffled.communities, shuffled.community_reports, 2, roll_up=False), weights, 86, 500, words
    )
    assert [b.text for b in again] == [b.text for b in batches]


def test_a_report_too_large_for_a_batch_is_left_out_and_reported():
    data = make_data(content_words=600)
    result = search(
        ScriptedChat({"query_global_map": '{"points": []}'}), data, options=settings(max_context_tokens=500)
    )
    assert result.details["batches"] == []
    assert "do not fit global.max_context_tokens" in result.warnings[0]
    assert result.answer == NO_DATA_ANSWER


# --- map / reduce --------------------------------------------------------------------------------


def map_by_topic(answers: dict[int, str]):
    """A map answer chosen by the single report in the batch (one report per batch in these tests)."""

    def answer(messages):
        (topic,) = topics(messages[0]["content"])
        return answers[topic]

    return answer


def points(*items) -> str:
    return json.dumps({"points": [{"description": d, "score": s} for d, s in items]})


def test_map_reduce_drops_zero_scores_tolerates_unreadable_answers_and_sorts_by_score():
    chat = ScriptedChat(
        {
            "query_global_map": map_by_topic(
                {
                    1: points(("Point one-a [Data: Reports (1)]", 40), ("Useless", 0)),
                    3: "I am sorry, I cannot produce JSON today.",
                    4: "```json\n" + points(("Point four [Data: Reports (4)]", 90)) + "\n```",
                    5: '{"points": [{"description": "Point five [Data: Reports (5)]", "score": "70"},]',
                }
            ),
            "query_global_reduce": "The final answer [Data: Reports (4, 5)].",
        }
    )
    # 300-word reports, 500-token batches: one report per batch
    result = search(chat, make_data(content_words=300), options=settings(max_context_tokens=500))
    assert chat.purposes().count("query_global_map") == 4 and chat.purposes()[-1] == "query_global_reduce"
    assert all(c.json_mode and c.use_cache for c in chat.calls_for("query_global_map"))
    assert [c.messages[1]["content"] for c in chat.calls_for("query_global_map")] == ["What happened?"] * 4
    reduce_call = chat.calls_for("query_global_reduce")[0]
    assert not reduce_call.use_cache
    system = reduce_call.messages[0]["content"]
    # best first; the zero-score point and the unreadable answer contribute nothing
    assert system.index("Point four") < system.index("Point five") < system.index("Point one-a")
    assert "Useless" not in system and "cannot produce JSON" not in system
    assert re.findall(r"Importance Score: (\d+)", system) == ["90", "70", "40"]
    assert result.details["points_kept"] == 3
    unreadable = [b for b in result.details["batches"] if not b["readable"]]
    assert [b["reports"] for b in unreadable] == [["3"]]
    assert any("could not be read as JSON points" in w for w in result.warnings)
    assert result.answer == "The final answer [Data: Reports (4, 5)]."
    assert sorted(result.context_records.citations("reports"), key=int) == ["1", "3", "4", "5"]
    assert result.usage.chat_calls == 5
    json.dumps(result.to_dict())


def test_nothing_scores_means_no_reduce_call_and_the_fixed_answer():
    chat = ScriptedChat({"query_global_map": points(("The reports do not say", 0))})
    streamed: list[str] = []
    result = search(chat, on_token=streamed.append)
    assert set(chat.purposes()) == {"query_global_map"}
    assert result.answer == NO_DATA_ANSWER == "".join(streamed)
    assert result.details["points_kept"] == 0


def test_reduce_keeps_whole_points_within_data_max_tokens():
    long = filler("p", 200)
    scored = [ScoredPoint(0, i, MapPoint(f"{long} n{i}", 50 - i)) for i in range(3)]
    text, kept = reduce_data(scored, 500, words)
    assert kept == 2 and "n0" in text and "n1" in text and "n2" not in text
    assert words(text) <= 500


def test_reduce_prompt_gets_response_type_and_max_length():
    chat = ScriptedChat({"query_global_map": points(("A point", 10)), "query_global_reduce": "answer"})
    search(chat, options=settings(reduce_max_length=123, map_max_length=77), response_type="A haiku")
    reduce_system = chat.calls_for("query_global_reduce")[0].messages[0]["content"]
    assert "A haiku" in reduce_system and "123 words" in reduce_system
    assert "77 words" in chat.calls_for("query_global_map")[0].messages[0]["content"]


# --- dynamic selection ---------------------------------------------------------------------------


def rate_by_topic(ratings: dict[int, int | str]):
    def answer(messages):
        (topic,) = topics(messages[0]["content"].split("Report:", 1)[1])
        rating = ratings[topic]
        return rating if isinstance(rating, str) else json.dumps({"reason": "because", "rating": rating})

    return answer


def dynamic_chat(ratings):
    return ScriptedChat(
        {
            "query_global_rate": rate_by_topic(ratings),
            "query_global_map": lambda m: points((f"about {topics(m[0]['content'])}", 50)),
            "query_global_reduce": "answer",
        }
    )


def test_dynamic_selection_descends_only_into_relevant_communities():
    chat = dynamic_chat({0: 4, 1: 0, 2: 3, 3: 0, 4: 5, 5: 0})
    result = search(chat, options=settings(dynamic_selection=True))
    rated = result.details["dynamic"]["rated"]
    assert [(r["community"], r["rating"]) for r in rated] == [(0, 4), (1, 0), (2, 3), (3, 0), (4, 5), (5, 0)]
    # c1 is irrelevant (its subtree is never rated); c0 and c2 give way to their relevant children
    assert result.details["dynamic"]["selected"] == [4]
    assert [topics(c.messages[0]["content"]) for c in chat.calls_for("query_global_map")] == [[4]]
    assert all(c.json_mode and c.use_cache for c in chat.calls_for("query_global_rate"))
    assert result.context_records.citations("reports") == ["4"]


def test_dynamic_selection_stops_at_the_level_cap_and_keeps_parents_without_relevant_children():
    chat = dynamic_chat({0: 4, 1: 2, 2: 3, 3: 0, 4: 5, 5: 0})
    result = search(chat, options=settings(dynamic_selection=True, community_level=1))
    assert [r["community"] for r in result.details["dynamic"]["rated"]] == [0, 1, 2, 3]
    assert result.details["dynamic"]["selected"] == [1, 2]  # c1 has no children; c0 gave way to c2


def test_dynamic_selection_tries_the_next_level_when_nothing_is_relevant():
    chat = dynamic_chat({0: 0, 1: 0, 2: 0, 3: 2, 4: 5, 5: 5})
    result = search(chat, options=settings(dynamic_selection=True, dynamic_threshold=2))
    rated = [r["community"] for r in result.details["dynamic"]["rated"]]
    assert rated == [0, 1, 2, 3]  # all of level 1 once level 0 gave nothing; c2's children are not rated
    assert result.details["dynamic"]["selected"] == [3]


def test_dynamic_selection_counts_an_unreadable_rating_as_one():
    chat = dynamic_chat({0: "no idea", 1: 0, 2: 0, 3: 0, 4: 0, 5: 0})
    result = search(chat, options=settings(dynamic_selection=True, dynamic_threshold=1))
    assert result.details["dynamic"]["selected"] == [0]
    assert any("community 0 could not be read" in w for w in result.warnings)


# --- no LLM --------------------------------------------------------------------------------------


def test_global_no_llm_lists_the_closest_report_summaries():
    result = search(None, embedder=ScriptedEmbedder(default=(1.0, 0.0)), community_level=2, roll_up=False)
    assert result.llm_used is False and result.usage.chat_calls == 0
    # by similarity (c3, then c1 and c4 tie -> higher rank c4 first, c2, c0), top 5
    assert result.context_records.citations("reports") == ["3", "4", "1", "2", "0"]
    assert result.answer.startswith("No LLM was used")
    assert "1. Report3: summary of 3 [Data: Reports (3)]" in result.answer
    assert "5. Report0: summary of 0 [Data: Reports (0)]" in result.answer


def test_global_no_llm_without_embedder_ranks_by_rank_and_says_so():
    result = search(None, community_level=1)  # roll-up: c1, c2, c3
    assert result.context_records.citations("reports") == ["2", "3", "1"]
    assert any("rank only" in w for w in result.warnings)


# --- tolerant parsing of map and rate answers ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"points": [{"description": "a", "score": 70}]}', [("a", 70)]),
        ('Sure!\n```json\n{"points": [{"description": "a", "score": 70}]}\n```\nHope it helps', [("a", 70)]),
        ('{"points": [{"description": "a", "score": "85"}, {"description": "b"}]}', [("a", 85), ("b", 0)]),
        ('{"points": [{"description": "a", "score": 140}, {"description": "", "score": 9}]', [("a", 100)]),
        ('{"points": [{"description": "a", "score": 12.6},]}', [("a", 13)]),
        ('{"points": []}', []),
        ("I cannot answer that.", None),
        ('{"answer": "no points key"}', None),
        ("", None),
    ],
)
def test_parse_map_points(text, expected):
    from graphrag_assets.query.json_answers import parse_map_points

    parsed = parse_map_points(text)
    assert (None if parsed is None else [(p.description, p.score) for p in parsed]) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"reason": "x", "rating": 4}', 4),
        ('```\n{"rating": "3", "reason": "x"}\n```', 3),
        ('{"reason": "cut off", "rating": 2', 2),
        ("rating: 5 because it is on topic", 5),
        ('{"rating": 9}', 5),
        ("no idea", None),
    ],
)
def test_parse_rating(text, expected):
    from graphrag_assets.query.json_answers import parse_rating

    assert parse_rating(text) == expected
