"""Tests of answer joining and of the gleaning loop against a scripted stand-in for the model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import polars as pl
import pytest

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import LLMError
from graphrag_assets.index.extraction_parser import parse_graph_answer
from graphrag_assets.index.graph_extraction import (
    ClaimOptions,
    ExtractionPlan,
    GleaningPrompts,
    claim_prompts,
    extract_graph_records,
    glean,
    graph_prompts,
    join_answers,
    wants_more,
)
from graphrag_assets.llm.types import ChatOptions, ChatResult, Message
from graphrag_assets.prompts.templates import PromptTemplate


class ScriptedModel:
    """Stand-in for the external model: answers from a function of the conversation, records every call."""

    model = "scripted"

    def __init__(self, answer: Callable[[list[Message], str], str]):
        self._answer = answer
        self.calls: list[dict] = []

    async def chat(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> ChatResult:
        prompt_version = (options or ChatOptions()).prompt_version
        conversation = [dict(m) for m in messages]
        self.calls.append(
            {
                "messages": conversation,
                "purpose": purpose,
                "prompt_version": prompt_version,
                "cache_if": (options or ChatOptions()).cache_if,
            }
        )
        await asyncio.sleep(0)
        text = self._answer(conversation, purpose)
        return ChatResult(text=text, prompt_tokens=10, completion_tokens=len(text), cached=False)

    def stream(self, messages, *, purpose, options=None):  # pragma: no cover - unused
        raise NotImplementedError


PROMPTS = GleaningPrompts(
    extract=PromptTemplate("extract_graph", "EXTRACT types={entity_types} text={input_text}"),
    continue_=PromptTemplate("extract_graph_continue", "CONTINUE"),
    loop_check=PromptTemplate("extract_graph_loop_check", "MORE?"),
)


def roles(messages: list[dict]) -> list[str]:
    return [f"{m['role']}:{m['content']}" for m in messages]


# --- join_answers ----------------------------------------------------------------------------


def test_join_keeps_the_first_record_after_a_completion_marker():
    """MS GraphRAG glues '...<|COMPLETE|>' + '("entity"...' and loses that record (quirk Q1)."""
    first = '("entity"<|>A<|>person<|>a)##\n("entity"<|>B<|>person<|>b)\n<|COMPLETE|>'
    glean_answer = '("entity"<|>C<|>geo<|>c)##("entity"<|>D<|>geo<|>d)<|COMPLETE|>'
    joined = join_answers([first, glean_answer])
    assert (
        joined
        == '("entity"<|>A<|>person<|>a)##\n("entity"<|>B<|>person<|>b)##\n("entity"<|>C<|>geo<|>c)##("entity"<|>D<|>geo<|>d)'
    )
    assert [e.title for e in parse_graph_answer(joined).entities] == ["A", "B", "C", "D"]


def test_join_answer_without_completion_marker_and_empty_gleanings():
    assert join_answers(["(x)", "<|COMPLETE|>", "", "  ##\n(y)##\n<|complete|>"]) == "(x)##\n(y)"
    assert join_answers([]) == ""
    assert join_answers(["<|COMPLETE|>"]) == ""


def test_join_replaces_a_completion_marker_inside_an_answer():
    assert join_answers(["(a)<|COMPLETE|>(b)"]) == "(a)##(b)"


@pytest.mark.parametrize(
    ("reply", "more"),
    [("Y", True), ("y", True), (' "Yes."', True), ("N", False), ("No", False), ("", False), ("**N**", False)],
)
def test_loop_check_reply(reply, more):
    assert wants_more(reply) is more


# --- the gleaning loop ----------------------------------------------------------------------------


def run(coro):
    return asyncio.run(coro)


def test_no_gleaning_is_one_call():
    model = ScriptedModel(lambda messages, purpose: "A0")
    conversation = run(glean(model, "PROMPT", prompts=PROMPTS, max_gleanings=0, purpose="extract_graph"))
    assert conversation.answers == ["A0"]
    assert [roles(c["messages"]) for c in model.calls] == [["user:PROMPT"]]


def test_one_gleaning_is_two_calls_and_no_loop_check():
    answers = iter(["A0", "A1"])
    model = ScriptedModel(lambda messages, purpose: next(answers))
    conversation = run(glean(model, "PROMPT", prompts=PROMPTS, max_gleanings=1, purpose="extract_graph"))
    assert conversation.answers == ["A0", "A1"]
    assert [roles(c["messages"]) for c in model.calls] == [
        ["user:PROMPT"],
        ["user:PROMPT", "assistant:A0", "user:CONTINUE"],
    ]
    assert {c["purpose"] for c in model.calls} == {"extract_graph"}
    assert {c["prompt_version"] for c in model.calls} == {PROMPTS.extract.version}
    assert conversation.usage.calls == 2 and conversation.usage.prompt_tokens == 20


def test_loop_check_between_gleanings_and_never_after_the_last():
    def answer(messages, purpose):
        last = messages[-1]["content"]
        if last == "MORE?":
            return "Y"
        return f"A{sum(m['role'] == 'assistant' for m in messages)}"

    model = ScriptedModel(answer)
    conversation = run(glean(model, "PROMPT", prompts=PROMPTS, max_gleanings=3, purpose="extract_graph"))
    assert conversation.answers == ["A0", "A1", "A2", "A3"]
    assert [roles(c["messages"]) for c in model.calls] == [
        ["user:PROMPT"],
        ["user:PROMPT", "assistant:A0", "user:CONTINUE"],
        ["user:PROMPT", "assistant:A0", "user:CONTINUE", "assistant:A1", "user:MORE?"],
        ["user:PROMPT", "assistant:A0", "user:CONTINUE", "assistant:A1", "user:CONTINUE"],
        ["user:PROMPT", "assistant:A0", "user:CONTINUE", "assistant:A1", "user:CONTINUE", "assistant:A2", "user:MORE?"],
        [
            "user:PROMPT",
            "assistant:A0",
            "user:CONTINUE",
            "assistant:A1",
            "user:CONTINUE",
            "assistant:A2",
            "user:CONTINUE",
        ],
    ]


def test_loop_stops_when_the_model_says_no():
    model = ScriptedModel(lambda messages, purpose: "N" if messages[-1]["content"] == "MORE?" else "A")
    conversation = run(glean(model, "PROMPT", prompts=PROMPTS, max_gleanings=5, purpose="extract_graph"))
    assert conversation.answers == ["A", "A"]
    assert len(model.calls) == 3


# --- extraction over text units ---------------------------------------------------------------------

UNITS = pl.DataFrame(
    {
        "id": ["u2", "u1", "u3"],
        "text": ["Kessmoor was flooded.", "Ilse Brandt is mayor of Kessmoor.", "   "],
        "document_key": ["doc-b", "doc-a", "doc-a"],
    }
)

GRAPH_ANSWERS = {
    "Ilse Brandt is mayor of Kessmoor.": [
        '("entity"<|>Ilse Brandt<|>person<|>The mayor.)##("entity"<|>Kessmoor<|>geo<|>A village.)<|COMPLETE|>',
        '("relationship"<|>Ilse Brandt<|>Kessmoor<|>She is its mayor.<|>8)<|COMPLETE|>',
    ],
    "Kessmoor was flooded.": [
        '("entity"<|>Kessmoor<|>geo<|>A flooded village.)##("entity"<|>Kessmoor<|>geo)<|COMPLETE|>',
        "<|COMPLETE|>",
    ],
}
CLAIM_ANSWERS = {
    "Ilse Brandt is mayor of Kessmoor.": [
        "(Ilse Brandt<|>Kessmoor<|>office<|>TRUE<|>NONE<|>NONE<|>She is mayor.<|>mayor of Kessmoor)<|COMPLETE|>",
        "(Kessmoor<|>NONE<|>governance<|>TRUE<|>NONE<|>NONE<|>It has a mayor.<|>mayor of Kessmoor)<|COMPLETE|>",
    ],
    "Kessmoor was flooded.": ["<|COMPLETE|>", "<|COMPLETE|>"],
}


def scripted_extractor(messages, purpose):
    prompt = messages[0]["content"]
    text = prompt.split("text=", 1)[1]
    turn = sum(m["role"] == "assistant" for m in messages)
    answers = GRAPH_ANSWERS if purpose == "extract_graph" else CLAIM_ANSWERS
    return answers[text][turn]


CLAIM_PROMPTS = GleaningPrompts(
    extract=PromptTemplate("extract_claims", "CLAIMS about={claim_description} types={entity_specs} text={input_text}"),
    continue_=PromptTemplate("extract_claims_continue", "CONTINUE CLAIMS"),
    loop_check=PROMPTS.loop_check,
)


def test_extract_graph_records_rows():
    model = ScriptedModel(scripted_extractor)
    output = run(
        extract_graph_records(
            model,
            UNITS,
            ExtractionPlan(
                ["person", "geo"],
                PROMPTS,
                max_gleanings=1,
                claims=ClaimOptions(description="offices held", prompts=CLAIM_PROMPTS, max_gleanings=1),
            ),
        )
    )
    records = output.records
    assert records.schema == pl.Schema(schemas.GRAPH_EXTRACTIONS)
    assert records.select(
        "text_unit_id", "record_index", "record_type", "title", "source", "target", "weight", "document_key"
    ).rows() == [
        ("u1", 0, "entity", "ILSE BRANDT", None, None, None, "doc-a"),
        ("u1", 1, "entity", "KESSMOOR", None, None, None, "doc-a"),
        ("u1", 2, "relationship", None, "ILSE BRANDT", "KESSMOOR", 8.0, "doc-a"),
        ("u1", 3, "claim", None, "ILSE BRANDT", "KESSMOOR", None, "doc-a"),
        ("u1", 4, "claim", None, "KESSMOOR", "NONE", None, "doc-a"),
        ("u2", 0, "entity", "KESSMOOR", None, None, None, "doc-b"),
    ]
    claim = records.filter(pl.col("record_type") == "claim").row(0, named=True)
    assert (claim["type"], claim["status"], claim["start_date"], claim["description"], claim["source_text"]) == (
        "OFFICE",
        "TRUE",
        "NONE",
        "She is mayor.",
        "mayor of Kessmoor",
    )
    # the broken second record of u2 is reported, not dropped silently
    assert list(output.parse_failures) == ["u2"]
    assert [f.reason for f in output.parse_failures["u2"]] == ["entity record has 3 fields; expected 4"]
    assert output.failed_units == []
    # 2 units with text x (2 graph + 2 claim calls); the blank unit costs nothing
    assert output.usage.calls == len(model.calls) == 8
    claim_prompt = next(c for c in model.calls if c["purpose"] == "extract_claims")["messages"][0]["content"]
    assert claim_prompt.startswith("CLAIMS about=offices held types=person, geo text=")


def test_unit_whose_model_call_fails_is_reported_not_dropped():
    def failing(messages, purpose):
        if "Kessmoor was flooded." in messages[0]["content"] and len(messages) > 1:
            raise LLMError("the model endpoint returned 500 five times; check the server.")
        return scripted_extractor(messages, purpose)

    progress: list[tuple[int, int]] = []
    output = run(
        extract_graph_records(
            ScriptedModel(failing),
            UNITS,
            ExtractionPlan(["person", "geo"], PROMPTS, max_gleanings=1),
            on_unit_done=lambda done, total: progress.append((done, total)),
        )
    )
    assert [(f.text_unit_id, f.document_key, f.message) for f in output.failed_units] == [
        ("u2", "doc-b", "the model endpoint returned 500 five times; check the server.")
    ]
    assert set(output.records.get_column("text_unit_id")) == {"u1"}
    assert sorted(progress) == [(1, 3), (2, 3), (3, 3)]


def test_extraction_answers_with_no_readable_record_are_kept_out_of_the_cache():
    model = ScriptedModel(lambda messages, purpose: "NO" if messages[-1]["content"] == "MORE?" else "<|COMPLETE|>")
    run(extract_graph_records(model, UNITS, ExtractionPlan(["person", "geo"], PROMPTS, max_gleanings=2)))
    extraction = [c for c in model.calls if c["messages"][-1]["content"] != "MORE?"]
    loop_checks = [c for c in model.calls if c["messages"][-1]["content"] == "MORE?"]
    assert extraction and loop_checks and all(c["cache_if"] is None for c in loop_checks)
    readable = extraction[0]["cache_if"]
    assert readable('("entity"<|>ILSE BRANDT<|>person<|>Mayor.")##<|COMPLETE|>')
    assert readable("<|COMPLETE|>")  # nothing found is an answer too
    assert readable('("entity"<|>ILSE BRANDT<|>person<|>Mayor.")##("entity"<|>broken)')  # partly readable: kept
    assert not readable('("entity"<|>broken)##("relationship"<|>also broken)')


def test_prompt_tuned_for_ms_graphrag_gets_its_delimiters():
    ms_style = PromptTemplate(
        "extract_graph",
        "types={entity_types} fmt=(entity{tuple_delimiter}NAME){record_delimiter}{completion_delimiter} text={input_text}",
    )
    model = ScriptedModel(lambda messages, purpose: "<|COMPLETE|>")
    prompts = GleaningPrompts(ms_style, PROMPTS.continue_, PROMPTS.loop_check)
    output = run(extract_graph_records(model, UNITS.head(1), ExtractionPlan(["geo"], prompts, max_gleanings=0)))
    assert (
        model.calls[0]["messages"][0]["content"]
        == "types=geo fmt=(entity<|>NAME)##<|COMPLETE|> text=Kessmoor was flooded."
    )
    assert output.records.height == 0 and output.records.schema == pl.Schema(schemas.GRAPH_EXTRACTIONS)


def test_builtin_prompt_sets_fill_without_errors():
    graph, claims = graph_prompts(), claim_prompts()
    assert graph.extract.name == "extract_graph" and claims.extract.name == "extract_claims"
    model = ScriptedModel(lambda messages, purpose: "<|COMPLETE|>")
    run(
        extract_graph_records(
            model,
            UNITS.head(1),
            ExtractionPlan(["geo"], graph, max_gleanings=1, claims=ClaimOptions("anything", claims, max_gleanings=0)),
        )
    )
    sent = [c["messages"][-1]["content"] for c in model.calls]
    assert any(s.rstrip().endswith("Passage:\nKessmoor was flooded.\nAnswer:") for s in sent)
    assert sum(s == graph.continue_.text for s in sent) == 1
