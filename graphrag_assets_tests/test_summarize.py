"""Tests of description summarization: the chunk plan, the rolling summary, and calls made."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from graphrag_assets.core.errors import LLMError
from graphrag_assets.index.summarize import (
    SummaryOptions,
    distinct_descriptions,
    item_name,
    plan_summary_chunks,
    summarize_all,
)
from graphrag_assets.llm.types import ChatOptions, ChatResult, Message
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt


def words(text: str) -> int:
    return len(text.split())


TEMPLATE = PromptTemplate("summarize_descriptions", "NAME {entity_name} LIST {description_list} MAX {max_length}")


class ScriptedModel:
    """Stand-in for the external model: a fixed answer, else the listed descriptions joined by "+";
    raises for names listed in ``fail``."""

    model = "scripted"

    def __init__(self, fail: Sequence[str] = (), answer: str | None = None):
        self.fail = set(fail)
        self.answer = answer
        self.prompts: list[str] = []
        self.calls: list[dict] = []

    async def chat(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> ChatResult:
        prompt_version = (options or ChatOptions()).prompt_version
        prompt = messages[0]["content"]
        self.prompts.append(prompt)
        self.calls.append(
            {"roles": [m["role"] for m in messages], "purpose": purpose, "prompt_version": prompt_version}
        )
        await asyncio.sleep(0)
        if self.answer is not None:
            return ChatResult(text=self.answer, prompt_tokens=1, completion_tokens=1, cached=False)
        name = prompt.split("NAME ", 1)[1].split(" LIST ", 1)[0]
        if name in self.fail:
            raise LLMError("the model endpoint refused the request.")
        listed = json.loads(prompt.split(" LIST ", 1)[1].split(" MAX ", 1)[0])
        return ChatResult(text="+".join(listed), prompt_tokens=1, completion_tokens=1, cached=False)

    def stream(self, messages, *, purpose, options=None):  # pragma: no cover - unused
        raise NotImplementedError


def run(model, items, max_input_tokens=1000, max_length=50):
    return asyncio.run(summarize_all(model, items, SummaryOptions(TEMPLATE, max_input_tokens, max_length, words)))


# --- planning ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("descriptions", "budget", "groups"),
    [
        ([], 10, []),
        (["a b"], 1, [["a b"]]),
        (["a", "b", "c"], 10, [["a", "b", "c"]]),
        (["a b", "c d", "e f", "g h"], 4, [["a b", "c d"], ["e f", "g h"]]),
        (["a b", "c d", "e f"], 5, [["a b", "c d"], ["e f"]]),
        (["a b c d e f", "g", "h"], 3, [["a b c d e f", "g"], ["h"]]),  # two at least, even if too big
        (["a", "b", "c", "d", "e"], 3, [["a", "b", "c"], ["d", "e"]]),
    ],
)
def test_plan_summary_chunks(descriptions, budget, groups):
    assert plan_summary_chunks(descriptions, budget, words) == groups


def test_plan_keeps_every_description_once_in_order():
    descriptions = [" ".join(["w"] * (i % 7 + 1)) + f" {i}" for i in range(50)]
    groups = plan_summary_chunks(descriptions, 12, words)
    assert [d for g in groups for d in g] == descriptions
    assert all(len(g) >= 2 for g in groups[:-1])
    assert all(sum(words(d) for d in g) <= 12 for g in groups if len(g) > 2)


def test_distinct_descriptions_and_names():
    assert distinct_descriptions(["b", " a ", "b", "", None, "  "]) == ["a", "b"]
    assert item_name("SCROOGE") == '"SCROOGE"'
    assert item_name(("FRED", "SCROÖGE")) == '["FRED", "SCROÖGE"]'


# --- summarizing -------------------------------------------------------------------------------


def test_zero_and_one_description_cost_no_call():
    model = ScriptedModel()
    result = run(model, [("A", []), ("B", ["  only one "]), ("C", ["same", "same"]), ("D", ["", None])])
    assert result == {"A": "", "B": "only one", "C": "same", "D": ""}
    assert model.calls == []


def test_several_descriptions_one_call_with_sorted_distinct_json_list():
    model = ScriptedModel()
    result = run(model, [("SCROOGE", ["b two", "a one", "b two"]), (("FRED", "SCROOGE"), ["y", "x"])])
    assert result == {"SCROOGE": "a one+b two", ("FRED", "SCROOGE"): "x+y"}
    assert sorted(model.prompts) == [
        'NAME "SCROOGE" LIST ["a one", "b two"] MAX 50',
        'NAME ["FRED", "SCROOGE"] LIST ["x", "y"] MAX 50',
    ]
    assert {(tuple(c["roles"]), c["purpose"], c["prompt_version"]) for c in model.calls} == {
        (("user",), "summarize_descriptions", TEMPLATE.version)
    }


def test_same_description_set_gives_the_same_prompt():
    """The cache key depends on the set of descriptions only, not their order or repeats."""
    first, second = ScriptedModel(), ScriptedModel()
    run(first, [("A", ["x", "y", "z"])])
    run(second, [("A", ["z", "y", "x", "y"])])
    assert first.prompts == second.prompts


def test_rolling_summary_when_descriptions_do_not_fit():
    # overhead: 'NAME "A" LIST [] MAX 50' = 6 words, so budget = 12 - 6 = 6 words; each
    # description of two words costs 3 as a list entry ("w x", plus the comma).
    model = ScriptedModel()
    result = run(model, [("A", ["a a", "b b", "c c", "d d", "e e"])], max_input_tokens=12)
    assert model.prompts == [
        'NAME "A" LIST ["a a", "b b"] MAX 50',
        'NAME "A" LIST ["a a+b b", "c c"] MAX 50',
        'NAME "A" LIST ["a a+b b+c c", "d d"] MAX 50',
        'NAME "A" LIST ["a a+b b+c c+d d", "e e"] MAX 50',
    ]
    assert result == {"A": "a a+b b+c c+d d+e e"}


def test_real_prompt_and_default_tokenizer():
    template = load_prompt("summarize_descriptions")
    model = ScriptedModel(answer="merged")
    result = asyncio.run(summarize_all(model, [("A", ["one", "two"])], SummaryOptions(template, max_length=120)))
    assert result == {"A": "merged"}
    assert '["one", "two"]' in model.prompts[0] and "120 words" in model.prompts[0] and '"A"' in model.prompts[0]


def test_empty_answer_keeps_the_descriptions():
    model = ScriptedModel(answer="   ")
    assert run(model, [("A", ["x", "y"])]) == {"A": "x\ny"}


def test_failed_item_raises_after_the_others_finished():
    model = ScriptedModel(fail=['"B"'])
    with pytest.raises(
        LLMError, match=r"^1 of 3 description summaries failed \(first: the model endpoint refused the request\.\); "
    ):
        run(model, [("A", ["1", "2"]), ("B", ["3", "4"]), ("C", ["5", "6"])])
    assert len(model.prompts) == 3  # A and C were still asked (and so cached by the real client)
