"""Report reuse: outcomes and reasons per community, their counts, and the dry-run prediction."""

from __future__ import annotations

import polars as pl

from graphrag_assets.index.report_reuse import (
    CHILD_REPORT_CHANGED,
    CONTEXT_CHANGED,
    MEMBERS_CHANGED,
    REUSED,
    entities_of_text_units,
    mentioned_entities,
    predict_reuse,
    prompt_hash,
    reuse_plan,
    summarize_reuse,
)

COLUMNS = {
    "community": pl.Int64,
    "level": pl.Int64,
    "community_id": pl.String,
    "prompt_hash": pl.String,
    "substituted_reports": pl.Int64,
    "children": pl.List(pl.Int64),
}


def reports(rows: list[tuple]) -> pl.DataFrame:
    """(community, level, community_id, prompt_hash, substituted_reports, children) rows."""
    return pl.DataFrame(rows, schema=COLUMNS, orient="row")


PREVIOUS = reports(
    [
        (0, 0, "root", "p-root", 2, [2, 3]),
        (1, 0, "other", "p-other", 0, []),
        (2, 1, "kid-a", "p-a", 0, []),
        (3, 1, "kid-b", "p-b", 0, []),
        (4, 0, "gone", "p-gone", 0, []),
    ]
)


def outcomes(plan: pl.DataFrame) -> dict[str, str]:
    return dict(plan.select("community_id", "outcome").iter_rows())


def test_each_report_gets_one_outcome_in_priority_order() -> None:
    current = reports(
        [
            (0, 0, "root", "p-root-2", 2, [2, 3]),  # a substituted child was regenerated
            (1, 0, "other", "p-other-2", 0, []),  # own rows changed
            (2, 1, "kid-a", "p-a", 0, []),  # unchanged
            (3, 1, "kid-b", "p-b-2", 0, []),  # own rows changed
            (5, 0, "new", "p-new", 0, []),  # members not seen before
        ]
    )
    assert outcomes(reuse_plan(PREVIOUS, current)) == {
        "root": CHILD_REPORT_CHANGED,
        "other": CONTEXT_CHANGED,
        "kid-a": REUSED,
        "kid-b": CONTEXT_CHANGED,
        "new": MEMBERS_CHANGED,
    }


def test_the_same_prompt_for_the_same_members_at_another_level_is_reused() -> None:
    moved = reports([(7, 2, "kid-a-one-level-down", "p-a", 0, [])])  # same prompt as kid-a had
    assert outcomes(reuse_plan(PREVIOUS, moved)) == {"kid-a-one-level-down": REUSED}


def test_a_parent_without_substitution_is_context_changed_even_when_a_child_changed() -> None:
    current = reports(
        [(0, 0, "root", "p-root-2", 0, [2, 3]), (2, 1, "kid-a", "p-a-2", 0, []), (3, 1, "kid-b", "p-b", 0, [])]
    )
    assert outcomes(reuse_plan(PREVIOUS, current))["root"] == CONTEXT_CHANGED


def test_a_parent_whose_children_were_all_reused_is_context_changed() -> None:
    current = reports(
        [(0, 0, "root", "p-root-2", 2, [2, 3]), (2, 1, "kid-a", "p-a", 0, []), (3, 1, "kid-b", "p-b", 0, [])]
    )
    assert outcomes(reuse_plan(PREVIOUS, current))["root"] == CONTEXT_CHANGED


def test_counts_add_up_and_deleted_communities_are_counted() -> None:
    current = reports(
        [
            (0, 0, "root", "p-root-2", 2, [2, 3]),
            (1, 0, "other", "p-other", 0, []),
            (2, 1, "kid-a", "p-a", 0, []),
            (3, 1, "kid-b", "p-b-2", 0, []),
            (5, 0, "new", "p-new", 0, []),
        ]
    )
    summary = summarize_reuse(PREVIOUS, current)
    assert summary.total == 5 and summary.reused == 2
    assert summary.regenerated == {MEMBERS_CHANGED: 1, CHILD_REPORT_CHANGED: 1, CONTEXT_CHANGED: 1}
    assert summary.reused + summary.regenerated_total == summary.total
    assert summary.deleted == 1  # "gone"
    assert summary.as_dict()["reasons"] == {MEMBERS_CHANGED: 1, CHILD_REPORT_CHANGED: 1, CONTEXT_CHANGED: 1}
    assert summary.line() == (
        "2 reused, 3 regenerated (1 members changed, 1 child report changed, 1 context changed), 1 deleted (of 5 reports)"
    )


def test_without_comparable_previous_reports_everything_is_new() -> None:
    current = reports([(0, 0, "root", "p", 0, []), (1, 0, "other", "q", 0, [])])
    assert summarize_reuse(None, current).regenerated == {MEMBERS_CHANGED: 2}
    older = PREVIOUS.drop("prompt_hash")  # a table written before the column existed
    summary = summarize_reuse(older, current)
    assert summary.regenerated == {MEMBERS_CHANGED: 2} and summary.deleted == 0


def test_prompt_hash_depends_on_template_length_and_context() -> None:
    base = prompt_hash("v1", 2000, "context")
    assert base == prompt_hash("v1", 2000, "context")
    assert (
        len(
            {
                base,
                prompt_hash("v2", 2000, "context"),
                prompt_hash("v1", 1500, "context"),
                prompt_hash("v1", 2000, "context!"),
            }
        )
        == 4
    )


# --- prediction --------------------------------------------------------------------------------

ENTITIES = pl.DataFrame(
    {
        "id": ["e1", "e2", "e3", "e4"],
        "title": ["BOB CRATCHIT", "TINY TIM", "SCROOGE", "TIM"],
        "text_unit_ids": [["u1"], ["u1", "u2"], ["u3"], ["u3"]],
    }
)


def test_mentioned_entities_match_whole_words_ignoring_case() -> None:
    assert mentioned_entities(ENTITIES, ["Bob Cratchit wrote to Tiny Tim."]) == {"e1", "e2", "e4"}
    assert mentioned_entities(ENTITIES, ["Scrooged is not Scrooge's"]) == {"e3"}
    assert mentioned_entities(ENTITIES, []) == set()


def test_entities_of_text_units() -> None:
    assert entities_of_text_units(ENTITIES, ["u2"]) == {"e2"}
    assert entities_of_text_units(ENTITIES, ["u1", "u3"]) == {"e1", "e2", "e3", "e4"}
    assert entities_of_text_units(ENTITIES, []) == set()


def test_predict_reuse_counts_communities_holding_an_affected_entity_at_any_level() -> None:
    communities = pl.DataFrame(
        {"community": [0, 1, 2, 3], "entity_ids": [["e1", "e2", "e3"], ["e4"], ["e1"], ["e2", "e3"]]}
    )
    prediction = predict_reuse(communities, {"e2"})
    assert prediction.as_dict() == {"total": 4, "regenerate_at_least": 2, "reuse_at_most": 2, "affected_entities": 1}
    assert predict_reuse(communities, set()).regenerate == 0
