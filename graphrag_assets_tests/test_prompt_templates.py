"""Tests of the prompt loader and of the built-in prompt files."""

from __future__ import annotations

import re

import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.index.extraction_parser import parse_claims_answer, parse_graph_answer
from graphrag_assets.prompts.templates import PromptTemplate, builtin_prompt_names, load_prompt, prompt_version

BUILTIN_PLACEHOLDERS = {
    "extract_graph": {"entity_types", "input_text"},
    "extract_graph_continue": set(),
    "extract_graph_loop_check": set(),
    "extract_claims": {"claim_description", "entity_types", "input_text"},
    "extract_claims_continue": set(),
    "summarize_descriptions": {"description_list", "entity_name", "max_length"},
}


def test_builtin_prompts_and_their_placeholders():
    assert set(BUILTIN_PLACEHOLDERS) <= set(builtin_prompt_names())
    for name, placeholders in BUILTIN_PLACEHOLDERS.items():
        template = load_prompt(name)
        assert set(template.placeholders) == placeholders, name
        assert re.fullmatch(r"[0-9a-f]{12}", template.version)


def test_builtin_prompts_load_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_prompt("extract_graph").text.startswith("You are helping to build a knowledge graph")


def test_version_is_a_hash_of_the_text():
    assert (
        PromptTemplate("a", "same {x}").version == PromptTemplate("b", "same {x}").version == prompt_version("same {x}")
    )
    assert PromptTemplate("a", "same {x}").version != PromptTemplate("a", "same {x}.").version


def test_format_fills_placeholders_keeps_doubled_braces_and_ignores_extra_values():
    template = PromptTemplate("t", 'Answer as {{"key": 1}} about {topic} in {n} words.')
    assert template.format(topic="owls", n=5, unused="x") == 'Answer as {"key": 1} about owls in 5 words.'


def test_filled_extraction_prompt_has_no_braces_left_and_contains_the_inputs():
    filled = load_prompt("extract_graph").format(entity_types="person, geo", input_text="PASSAGE-TEXT")
    assert "{" not in filled and "}" not in filled
    assert filled.rstrip().endswith("Passage:\nPASSAGE-TEXT\nAnswer:")
    assert "Entity types: person, geo" in filled


def _example_answers(text: str) -> list[str]:
    """The example answers written in a prompt (between 'Answer:' and '<|COMPLETE|>')."""
    return re.findall(r"Answer:\n(.*?<\|COMPLETE\|>)", text, flags=re.S)


def test_worked_examples_in_the_prompts_parse_cleanly():
    graph_examples = _example_answers(load_prompt("extract_graph").text)
    assert len(graph_examples) == 2
    parsed = [parse_graph_answer(example) for example in graph_examples]
    assert [(len(p.entities), len(p.relationships), len(p.failures)) for p in parsed] == [(5, 4, 0), (3, 2, 0)]
    for p in parsed:  # every relationship end is one of the example's entities
        names = {e.title for e in p.entities}
        assert all(r.source in names and r.target in names for r in p.relationships)
    claim_examples = _example_answers(load_prompt("extract_claims").text)
    claims = parse_claims_answer(claim_examples[0])
    assert [(c.subject, c.status) for c in claims.claims] == [("CORVEL SHIPPING", "TRUE"), ("RUTH MAYS", "SUSPECTED")]
    assert claims.failures == []


def test_user_prompt_file_relative_to_root(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "mine.txt").write_text("Types {entity_types}. Text: {input_text}", encoding="utf-8")
    template = load_prompt("extract_graph", "prompts/mine.txt", root=tmp_path)
    assert template.format(entity_types="a", input_text="b") == "Types a. Text: b"
    assert template.source == "prompt file prompts/mine.txt"
    absolute = load_prompt("extract_graph", tmp_path / "prompts" / "mine.txt")
    assert absolute.text == template.text


def test_missing_required_placeholder_message(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "my_extract.txt").write_text("Find entities of types {entity_types}.", encoding="utf-8")
    with pytest.raises(UserError) as error:
        load_prompt("extract_graph", "prompts/my_extract.txt", root=tmp_path)
    assert str(error.value) == (
        "prompt file prompts/my_extract.txt has no {input_text} placeholder; add it where the text to analyse should go."
    )


def test_missing_prompt_file(tmp_path):
    with pytest.raises(
        UserError, match=r"^prompt file prompts/nope\.txt for extract_graph was not found \(looked at .*nope\.txt\); "
    ):
        load_prompt("extract_graph", "prompts/nope.txt", root=tmp_path)


def test_prompt_file_that_is_not_utf8(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9 {input_text}")
    with pytest.raises(UserError, match=r"^prompt file bad\.txt is not valid UTF-8 text; save it as UTF-8\.$"):
        load_prompt("extract_graph", "bad.txt", root=tmp_path)


def test_prompt_path_that_is_a_directory(tmp_path):
    (tmp_path / "adir").mkdir()
    with pytest.raises(UserError, match="was not found"):
        load_prompt("extract_graph", "adir", root=tmp_path)


def test_unmatched_brace_is_reported(tmp_path):
    (tmp_path / "p.txt").write_text('Return JSON like {"a": 1} for {input_text}', encoding="utf-8")
    with pytest.raises(
        UserError, match=r"^prompt file p\.txt contains \{\"a\": 1\}, which is not a plain placeholder name"
    ):
        load_prompt("extract_graph", "p.txt", root=tmp_path)
    (tmp_path / "q.txt").write_text("Text: {input_text} and a stray {", encoding="utf-8")
    with pytest.raises(UserError, match=r"^prompt file q\.txt has an unmatched brace .*doubled as \{\{ and \}\}\.$"):
        load_prompt("extract_graph", "q.txt", root=tmp_path)


def test_attribute_access_is_not_a_placeholder(tmp_path):
    (tmp_path / "p.txt").write_text("{input_text.__class__}", encoding="utf-8")
    with pytest.raises(UserError, match="not a plain placeholder name"):
        load_prompt("extract_graph", "p.txt", root=tmp_path)


def test_unknown_placeholder_is_reported_when_filling(tmp_path):
    (tmp_path / "p.txt").write_text("{input_text} in {language}", encoding="utf-8")
    template = load_prompt("extract_graph", "p.txt", root=tmp_path)
    with pytest.raises(UserError) as error:
        template.format(input_text="x", entity_types="y")
    assert str(error.value) == (
        "prompt file p.txt uses the placeholder {language}, which this step does not provide "
        "(available: {entity_types}, {input_text}); remove it or write literal braces doubled."
    )


def test_required_placeholders_can_be_given_by_the_caller(tmp_path):
    (tmp_path / "r.txt").write_text("Report on {input_text}", encoding="utf-8")
    with pytest.raises(
        UserError, match=r"has no \{max_report_length\} placeholder; add it where that value should go\.$"
    ):
        load_prompt("community_report", "r.txt", root=tmp_path, required=["input_text", "max_report_length"])
    assert load_prompt("community_report", "r.txt", root=tmp_path, required=[]).placeholders == ("input_text",)


def test_unknown_builtin_prompt_is_a_programming_error():
    with pytest.raises(ValueError, match="no built-in prompt named 'nope'"):
        load_prompt("nope")


def test_blank_override_means_builtin():
    assert load_prompt("extract_graph", "").text == load_prompt("extract_graph").text
