"""Community report generation: answer parsing and repair, citations, markdown, the bottom-up loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import polars as pl
import pytest

from graphrag_assets.core import ids
from graphrag_assets.core.errors import LLMError, UserError
from graphrag_assets.core.schemas import COMMUNITY_REPORTS
from graphrag_assets.index.community_reports import (
    ReportOptions,
    generate_reports,
    load_report_prompt,
    parse_report_answer,
    remap_citations,
    render_markdown,
)
from graphrag_assets.index.report_context import ContextBudget, ReportTables
from graphrag_assets.llm.types import ChatOptions, ChatResult, Message
from graphrag_assets_testkit.shared_data import NANO_MOCK_CACHE, require
from graphrag_assets_tests.test_report_context import make_graph, text_graph, text_units

VALID = {
    "title": "Harbour trade",
    "summary": "D is a port.",
    "rating": 6.5,
    "rating_explanation": "Trade matters.",
    "findings": [{"summary": "Port", "explanation": "D is a harbour town."}],
}


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps(VALID),
        "```json\n" + json.dumps(VALID, indent=2) + "\n```",
        json.dumps(VALID, indent=2).replace('"Trade matters."', '"Trade matters.",').replace("}\n  ]", "},\n  ],"),
        "{'title': 'Harbour trade', 'summary': 'D is a port.', 'rating': 6.5, 'rating_explanation': 'Trade matters.', "
        "'findings': [{'summary': 'Port', 'explanation': 'D is a harbour town.'}]}",
        "Here is the report you asked for:\n" + json.dumps(VALID) + "\nI hope this helps.",
        json.dumps({k.upper(): v for k, v in VALID.items()}),
    ],
    ids=["plain", "fenced", "trailing-commas", "single-quotes", "text-around", "upper-case-keys"],
)
def test_parse_repairs_common_breakage(answer):
    assert parse_report_answer(answer) == VALID


def test_parse_repairs_a_truncated_answer():
    cut = json.dumps(
        {**VALID, "findings": [*VALID["findings"], {"summary": "Second", "explanation": "It goes on and"}]}
    )
    report = parse_report_answer(cut[: cut.index(" and") + 4])
    assert report is not None
    assert report["findings"][1] == {"summary": "Second", "explanation": "It goes on and"}


@pytest.mark.parametrize(
    ("rating", "rank"),
    [(12, 10.0), (-3, 0.0), (7, 7.0), ("7/10", 7.0), ("8.5", 8.5), (10.0, 10.0)],
)
def test_rating_is_clipped_to_0_10(rating, rank):
    assert parse_report_answer(json.dumps({**VALID, "rating": rating}))["rating"] == rank


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "I cannot write this report.",
        json.dumps({**VALID, "title": ""}),
        json.dumps({k: v for k, v in VALID.items() if k != "summary"}),
        json.dumps({**VALID, "rating": "high"}),
        json.dumps({**VALID, "rating": True}),
        json.dumps({**VALID, "rating": float("nan")}),
        json.dumps({**VALID, "findings": "none"}),
        json.dumps([1, 2, 3]),
    ],
)
def test_parse_rejects_answers_without_a_report(answer):
    assert parse_report_answer(answer) is None


def test_parse_normalizes_findings():
    answer = {
        **VALID,
        "findings": ["Just a headline", {"summary": "S"}, 3, {"explanation": ""}],
        "rating_explanation": None,
    }
    assert parse_report_answer(json.dumps(answer)) == {
        **VALID,
        "rating_explanation": "",
        "findings": [{"summary": "Just a headline", "explanation": ""}, {"summary": "S", "explanation": ""}],
    }


def test_nano_graphrag_gpt4o_report_answers_parse():
    cache = json.loads(require(NANO_MOCK_CACHE).read_text(encoding="utf-8"))
    answers = [entry["return"] for entry in cache.values()]
    reports = [a for a in answers if a.lstrip().startswith("{") or '"findings"' in a]
    parsed = [parse_report_answer(a) for a in reports]
    ok = [p for p in parsed if p is not None]
    print(f"{len(ok)} of {len(reports)} report answers parse ({len(answers)} cache entries)")
    assert (len(answers), len(reports), len(ok)) == (187, 101, 101)
    assert all(p["title"] and p["summary"] and 0 <= p["rating"] <= 10 and p["findings"] for p in ok)
    # The extraction answers are not mistaken for reports.
    assert [a for a in answers if a not in reports and parse_report_answer(a) is not None] == []


# --- citations and markdown ---------------------------------------------------------------------

CITATIONS = {"Entities": (412, 1093, 7), "Relationships": (55,), "Reports": (31,)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("X [Data: Entities (1, 2)].", "X [Data: Entities (412, 1093)]."),
        (
            "X [Data: Entities (3, 1, +more); Relationships (1)]",
            "X [Data: Entities (7, 412, +more); Relationships (55)]",
        ),
        ("X [data: entity (2), relationships (1)]", "X [Data: Entities (1093); Relationships (55)]"),
        ("X [Data: Reports (1)] and [Data: Claims (1)].", "X [Data: Reports (31)] and."),
        ("X [Data: Entities (9, 2, 2)]", "X [Data: Entities (1093)]"),
        ("X [Data: Entities (9)] end", "X end"),
        ("no citations", "no citations"),
    ],
)
def test_remap_citations(text, expected):
    assert remap_citations(text, CITATIONS) == expected


def test_render_markdown():
    report = {
        **VALID,
        "findings": [{"summary": "One", "explanation": "First."}, {"summary": "Two", "explanation": "Second."}],
    }
    assert render_markdown(report) == "# Harbour trade\n\nD is a port.\n\n## One\n\nFirst.\n\n## Two\n\nSecond."


def test_report_prompts_require_input_text(tmp_path):
    for variant in ("graph", "text"):
        template = load_report_prompt(variant)
        assert set(template.placeholders) == {"input_text", "max_report_length"}
    custom = tmp_path / "mine.txt"
    custom.write_text("Write a report, max {max_report_length} words.", encoding="utf-8")
    with pytest.raises(UserError, match="input_text"):
        load_report_prompt("graph", custom)


# --- the generation loop ------------------------------------------------------------------------


def answer(title: str, summary: str, rating: float = 5, explanation: str = "Because.") -> str:
    return json.dumps(
        {
            "title": title,
            "summary": summary,
            "rating": rating,
            "rating_explanation": "Why.",
            "findings": [{"summary": f"About {title}", "explanation": explanation}],
        }
    )


def community_of(prompt: str) -> int:
    """Which community of the test graph a report prompt is about."""
    if "Hill fort" in prompt:
        return 3
    if "-----Reports-----" in prompt or ("Alpha" in prompt and "Eastern quay" in prompt):
        return 0
    return 1 if "Alpha" in prompt else 2


class CannedModel:
    """Stand-in for the external model: answers per community, one per attempt (the last repeats)."""

    model = "canned"

    def __init__(self, answers: dict[int, list[str]], raise_for: Sequence[int] = ()):
        self.answers = answers
        self.raise_for = set(raise_for)
        self.calls: list[dict] = []

    async def chat(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> ChatResult:
        options = options or ChatOptions()
        community = community_of(messages[0]["content"])
        attempt = sum(m["role"] == "assistant" for m in messages)
        self.calls.append(
            {
                "community": community,
                "messages": list(messages),
                "purpose": purpose,
                "json_mode": options.wants_json,
                "prompt_version": options.prompt_version,
            }
        )
        await asyncio.sleep(0)
        if community in self.raise_for:
            raise LLMError("the model endpoint refused the request.")
        options = self.answers[community]
        return ChatResult(
            text=options[min(attempt, len(options) - 1)], prompt_tokens=1, completion_tokens=1, cached=False
        )

    def stream(self, messages, *, purpose, options=None):  # pragma: no cover - unused
        raise NotImplementedError


ANSWERS = {
    1: [answer("The trio", "A, B and C run the group [Data: Entities (1, 2); Relationships (1)].", rating=12)],
    2: [
        "Sorry, here is my report: title = harbour",
        "```json\n" + answer("The harbour", "D and E.").replace("}]}", "},]}") + "\n```",
    ],
    3: ["not json", "still not json"],
    0: [answer("The town", "The trio trades with the harbour [Data: Reports (1); Relationships (1)].")],
}


def run(model, max_input_length=170, on_progress=None):
    entities, relationships, communities, covariates = make_graph()
    return asyncio.run(
        generate_reports(
            model,
            ReportTables(communities, entities, relationships, covariates),
            ReportOptions(budget=ContextBudget(max_input_length)),
            on_progress,
        )
    )


def test_generation_bottom_up_with_reask_failure_and_substitution():
    model = CannedModel(ANSWERS)
    progress: list[tuple[int, int]] = []
    result = run(model, on_progress=lambda done, total: progress.append((done, total)))

    # Deepest level first: every call about level 1 (communities 1, 2) precedes level 0 (0, 3).
    assert [c["community"] for c in model.calls] == [1, 2, 2, 0, 3, 3]
    assert all(c["purpose"] == "community_report" and c["json_mode"] for c in model.calls)
    assert {c["prompt_version"] for c in model.calls} == {load_report_prompt("graph").version}

    # The broken answer of community 2 was asked again once, with the broken answer in the messages.
    reask = model.calls[2]["messages"]
    assert [m["role"] for m in reask] == ["user", "assistant", "user"]
    assert reask[1]["content"] == ANSWERS[2][0]
    assert reask[2]["content"].startswith("Your answer above could not be read as the requested JSON object.")

    # Community 3 stayed broken: reported, not in the frame.
    assert result.failed == [(3, "the answer was not a valid report JSON object, also when asked again")]
    assert (result.calls, result.reasks, result.level_counts) == (6, 2, {1: 2, 0: 1})
    assert progress == [(1, 4), (2, 4), (3, 4), (4, 4)]

    frame = result.frame
    assert frame.schema == pl.Schema(COMMUNITY_REPORTS)
    assert frame["community"].to_list() == [0, 1, 2]
    assert frame["generation"].to_list() == ["llm"] * 3

    # Community 0 (199 tokens of raw context, budget 170) used child 1's report.
    prompt_0 = model.calls[3]["messages"][0]["content"]
    assert (
        "-----Reports-----\nReport 1: The trio\nA, B and C run the group.\nFindings:\n- About The trio: Because."
        in prompt_0
    )
    assert frame.filter(pl.col("community") == 0)["substituted_reports"].item() == 1
    assert frame["substituted_reports"].to_list() == [1, 0, 0]
    assert all(0 < t <= 170 for t in frame["context_tokens"])

    one = frame.filter(pl.col("community") == 1).row(0, named=True)
    # Local entities 1, 2 are A and C (hrids 0 and 2); relationship 1 is A-C (hrid 101).
    expected_content = (
        "# The trio\n\nA, B and C run the group [Data: Entities (0, 2); Relationships (101)].\n\n"
        "## About The trio\n\nBecause."
    )
    assert one["full_content"] == expected_content
    assert one["id"] == ids.stable_uuid("community_report", expected_content)
    assert (one["human_readable_id"], one["level"], one["parent"], one["children"]) == (1, 1, 0, [])
    assert (one["rank"], one["rating_explanation"], one["period"], one["size"]) == (10.0, "Why.", "2024-01-01", 3)
    assert one["findings"] == [{"summary": "About The trio", "explanation": "Because."}]
    assert (
        json.loads(one["full_content_json"])["summary"]
        == "A, B and C run the group [Data: Entities (0, 2); Relationships (101)]."
    )
    assert json.loads(one["full_content_json"])["rating"] == 10.0

    # Community 0's citations: report 1 is community 1; its relationship 1 is C-D (hrid 103).
    zero = frame.filter(pl.col("community") == 0).row(0, named=True)
    assert zero["summary"] == "The trio trades with the harbour [Data: Reports (1); Relationships (103)]."
    assert (zero["parent"], zero["children"]) == (-1, [1, 2])


def test_generation_is_deterministic():
    first_model, second_model = CannedModel(ANSWERS), CannedModel(ANSWERS)
    first, second = run(first_model), run(second_model)
    assert first.frame.equals(second.frame)
    assert [c["messages"] for c in first_model.calls] == [c["messages"] for c in second_model.calls]


def test_failed_child_is_reported_and_parent_keeps_its_raw_rows():
    # Child 1 fails for good; community 0 still needs room (budget 170), so only child 2's report
    # can replace raw rows; A, B, C stay as rows.
    answers = {**ANSWERS, 3: [answer("Hill", "G and H.")]}
    model = CannedModel(answers, raise_for=[1])
    result = run(model, max_input_length=170)
    assert result.failed == [(1, "the model call failed: the model endpoint refused the request.")]
    assert result.frame["community"].to_list() == [0, 3, 2]  # by level, then community
    assert result.frame["substituted_reports"].to_list() == [1, 0, 0]
    prompt_0 = next(c for c in model.calls if c["community"] == 0)["messages"][0]["content"]
    assert "-----Reports-----\nReport 1: The harbour\n" in prompt_0
    assert "1|A|PERSON|Alpha leads the group|2" in prompt_0
    assert "Eastern quay" not in prompt_0


def test_empty_answer_fails_without_reask():
    model = CannedModel({1: [""], 2: [""], 0: [""], 3: [""]})
    result = run(model, max_input_length=8000)
    assert result.frame.is_empty() and result.frame.schema == pl.Schema(COMMUNITY_REPORTS)
    assert result.failed == [(c, "the model returned an empty answer") for c in (0, 1, 2, 3)]
    assert (result.calls, result.reasks) == (4, 0)


def test_text_variant_cites_sources_by_text_unit_short_id():
    entities, communities = text_graph()
    source_answer = answer("Sources", "From the texts [Data: Sources (1, 2)].")
    model = CannedModel({1: [source_answer], 2: [source_answer], 0: [source_answer], 3: [source_answer]})

    result = asyncio.run(
        generate_reports(
            model, ReportTables(communities, entities, text_units=text_units()), ReportOptions(variant="text")
        )
    )
    assert all("-----Sources-----\nid|text\n" in c["messages"][0]["content"] for c in model.calls)
    assert {c["prompt_version"] for c in model.calls} == {load_report_prompt("text").version}
    zero = result.frame.filter(pl.col("community") == 0).row(0, named=True)
    # Community 0's two best units: the shared one (A + D) and C's.
    shared, c_unit = ids.short_id("unit-shared"), ids.short_id("unit-c")
    assert zero["summary"] == f"From the texts [Data: Sources ({shared}, {c_unit})]."
    # Community 3's entities mention units that do not exist: nothing to report on, no call.
    assert result.failed == [(3, "its context is empty: it has no rows to report on")]
    assert len(model.calls) == 3


def test_microsoft_christmas_carol_index_fits_budget_and_substitutes():
    """All 122 communities of MS GraphRAG's own index: every context within budget, and the
    large ones built from their children's reports."""
    from graphrag_assets.core.schemas import COMMUNITIES, COVARIATES, ENTITIES, RELATIONSHIPS, conform
    from graphrag_assets_testkit.shared_data import MS_VERBS_DATA

    def table(name: str, schema: dict) -> pl.DataFrame:
        return conform(pl.read_parquet(require(MS_VERBS_DATA / f"{name}.parquet")), schema)

    class FixedModel:
        model = "fixed"
        calls = 0

        async def chat(self, messages, **_: object) -> ChatResult:
            self.calls += 1
            return ChatResult(
                answer("A community", "What it is about. " * 10, explanation="Details. " * 60), 1, 1, False
            )

    model = FixedModel()
    result = asyncio.run(
        generate_reports(
            model,
            ReportTables(
                table("communities", COMMUNITIES),
                table("entities", ENTITIES),
                table("relationships", RELATIONSHIPS),
                table("covariates", COVARIATES),
            ),
            ReportOptions(budget=ContextBudget(2000)),
        )
    )
    frame = result.frame
    assert (frame.height, result.failed, model.calls) == (122, [], 122)
    assert result.level_counts == {3: 2, 2: 32, 1: 65, 0: 23}
    assert frame["context_tokens"].max() <= 2000
    substituted = frame.filter(pl.col("substituted_reports") > 0)
    print(f"{substituted.height} of 122 contexts used sub-community reports")
    assert substituted.height == 17
    assert substituted["level"].max() < 3  # the deepest level has no reports to use
