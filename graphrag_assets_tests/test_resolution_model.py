"""The model-verdict path of entity resolution against the scripted server, with scripted verdicts.

These tests check the plumbing — the prompt, one call per candidate group, the response cache,
reading the answer, applying it, rejecting unusable answers — through the real ``openai`` client
and the real cache. The verdicts are scripted, so nothing here measures how good a model's
verdicts are.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.index.entity_resolution import Resolution, resolution_options, resolve_with_model
from graphrag_assets.index.resolution_verdicts import parse_groups
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import UsageMeter

PROMPT_HEAD = "Some entities of a knowledge graph may be duplicates"


def settings_for(server, root: Path, **resolution) -> Settings:
    (root / "data").mkdir(parents=True, exist_ok=True)
    overrides = {
        "method": "standard",
        "llm": {"base_url": server.base_url, "api_key": "sk-test", "embeddings": "openai", "max_retries": 0},
        "resolution": {"enabled": True, "neighbours": 0, **resolution},
    }
    return load_settings(root, environ={}, overrides=overrides)


def profiles(rows: list[tuple[str, str, int, list[str]]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "title": [r[0] for r in rows],
            "type": [r[1] for r in rows],
            "frequency": [r[2] for r in rows],
            "descriptions": [r[3] for r in rows],
            "text_unit_ids": [[f"u{i}"] for i, _ in enumerate(rows)],
        },
        schema={
            "title": pl.String,
            "type": pl.String,
            "frequency": pl.Int64,
            "descriptions": pl.List(pl.String),
            "text_unit_ids": pl.List(pl.String),
        },
    )


def resolve(settings: Settings, frame: pl.DataFrame) -> Resolution:
    with ModelSet(settings, UsageMeter()) as models:
        return asyncio.run(resolve_with_model(models.chat, models.embedder, frame, resolution_options(settings)))


def verdict_calls(server) -> list[str]:
    texts = ["\n".join(m["content"] for m in call["body"]["messages"]) for call in server.calls("chat")]
    return [t for t in texts if t.startswith(PROMPT_HEAD)]


def groups_answer(*groups: list[int], reason: str = "scripted") -> str:
    return json.dumps({"groups": [{"members": g, "confidence": 0.8, "reason": reason} for g in groups]})


SCROOGE = profiles(
    [
        ("SCROOGE", "PERSON", 37, ["Scrooge is a miser.", "Scrooge runs a counting-house."]),
        ("EBENEZER SCROOGE", "PERSON", 4, ["Ebenezer Scrooge is the main character."]),
        ("MARLEY", "PERSON", 5, ["Marley was Scrooge's partner."]),
        ("MARLEY'S GHOST", "PERSON", 3, ["The ghost of Marley visits Scrooge."]),
    ]
)


def test_the_prompt_lists_each_group_sorted_with_types_and_descriptions(openai_server, tmp_path: Path) -> None:
    settings = settings_for(openai_server, tmp_path)
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer())
    resolve(settings, SCROOGE)
    prompts = verdict_calls(openai_server)
    assert len(prompts) == 2  # {SCROOGE, EBENEZER SCROOGE} and {MARLEY, MARLEY'S GHOST}: two candidate groups
    scrooge = next(p for p in prompts if "EBENEZER" in p)
    assert "1. EBENEZER SCROOGE [PERSON]: Ebenezer Scrooge is the main character.\n" in scrooge
    assert "2. SCROOGE [PERSON]: Scrooge is a miser. | Scrooge runs a counting-house.\n" in scrooge
    body = next(c["body"] for c in openai_server.calls("chat") if "EBENEZER" in c["body"]["messages"][0]["content"])
    assert body["response_format"] == {"type": "json_object"}


def test_one_call_per_group_of_at_most_max_group_size(openai_server, tmp_path: Path) -> None:
    names = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO"]
    frame = profiles(
        [(name, "PERSON", 1, [f"{name} of the house."]) for name in names] + [("HOUSE", "GEO", 9, ["The house."])]
    )
    frame = frame.with_columns(
        pl.col("title").map_elements(lambda t: t if t == "HOUSE" else f"{t} HOUSE", return_dtype=pl.String)
    )
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer())
    resolution = resolve(settings_for(openai_server, tmp_path, max_group_size=3), frame)
    prompts = verdict_calls(openai_server)
    assert resolution.groups == len(prompts) == 3  # HOUSE with 5 others, 3 entities per call
    assert all(len(re.findall(r"^\d+\. ", p, re.MULTILINE)) <= 3 for p in prompts)
    assert all("HOUSE [GEO]" in p for p in prompts)


def test_verdicts_are_applied_around_the_centre_and_explained(openai_server, tmp_path: Path) -> None:
    openai_server.add_rule(r"\d\. EBENEZER SCROOGE", groups_answer([1, 2], reason="Ebenezer Scrooge is Scrooge."))
    openai_server.add_rule(r"\d\. MARLEY'S GHOST", groups_answer())  # rejected: a man and his ghost
    resolution = resolve(settings_for(openai_server, tmp_path), SCROOGE)
    assert resolution.aliases.select("alias", "canonical_title", "method", "score", "reason").rows() == [
        ("EBENEZER SCROOGE", "SCROOGE", "model", 0.8, "Ebenezer Scrooge is Scrooge.")
    ]


def test_a_group_asked_before_is_not_asked_again_even_when_rejected(openai_server, tmp_path: Path) -> None:
    settings = settings_for(openai_server, tmp_path)
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer())  # every group rejected
    assert resolve(settings, SCROOGE).aliases.is_empty()
    assert len(verdict_calls(openai_server)) == 2
    openai_server.reset()
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer([1, 2]))  # would merge, if asked
    assert resolve(settings, SCROOGE).aliases.is_empty()
    assert verdict_calls(openai_server) == []
    # a group whose content changed (a new description) is a new question
    changed = SCROOGE.with_columns(
        pl.when(pl.col("title") == "MARLEY")
        .then(pl.lit(["Marley died seven years ago."]))
        .otherwise(pl.col("descriptions"))
        .alias("descriptions")
    )
    assert resolve(settings, changed).aliases["alias"].to_list() == ["MARLEY'S GHOST"]
    assert len(verdict_calls(openai_server)) == 1


def test_an_unusable_answer_merges_nothing_and_is_asked_again(openai_server, tmp_path: Path) -> None:
    settings = settings_for(openai_server, tmp_path)
    openai_server.add_rule(re.escape(PROMPT_HEAD), "I think 1 and 2 are the same.")
    resolution = resolve(settings, SCROOGE)
    assert resolution.aliases.is_empty() and resolution.unusable_answers == 2
    openai_server.reset()
    openai_server.add_rule(re.escape(PROMPT_HEAD), "```json\n{'groups': [{'members': ['1', '2'],},],}\n```")  # repaired
    assert resolve(settings, SCROOGE).aliases.height == 2
    assert len(verdict_calls(openai_server)) == 2


def test_a_chain_across_two_groups_without_a_verdict_with_the_centre_is_not_merged(
    openai_server, tmp_path: Path
) -> None:
    frame = profiles(
        [
            ("ALPHA BETA", "PERSON", 5, ["Alpha Beta."]),
            ("BETA", "PERSON", 3, ["Beta."]),
            ("BETA GAMMA", "PERSON", 1, ["Beta Gamma."]),
        ]
    )
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer([1, 2]))  # each pair: "the same"
    resolution = resolve(settings_for(openai_server, tmp_path, max_group_size=2), frame)
    assert len(verdict_calls(openai_server)) == 2  # (ALPHA BETA, BETA) and (BETA, BETA GAMMA)
    assert resolution.aliases.select("alias", "canonical_title").rows() == [("BETA", "ALPHA BETA")]


def test_different_types_merge_when_the_verdict_says_so(openai_server, tmp_path: Path) -> None:
    frame = profiles([("LONDON", "GEO", 4, ["The city."]), ("THE LONDON", "ORGANIZATION", 1, ["The city of London."])])
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer([1, 2]))
    assert resolve(settings_for(openai_server, tmp_path), frame).aliases.select("alias", "canonical_title").rows() == [
        ("THE LONDON", "LONDON")
    ]


def test_nearest_neighbours_propose_names_that_share_nothing(openai_server, tmp_path: Path) -> None:
    frame = profiles(
        [
            ("FRED", "PERSON", 7, ["Fred is the nephew of Scrooge who invites him to Christmas dinner."]),
            ("SCROOGE'S NEPHEW", "PERSON", 6, ["The nephew of Scrooge invites him to Christmas dinner."]),
            ("LONDON", "GEO", 2, ["A foggy city of counting-houses and narrow courts."]),
        ]
    )
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer())
    resolve(settings_for(openai_server, tmp_path, neighbours=1, min_similarity=0.5), frame)
    prompts = verdict_calls(openai_server)
    assert len(prompts) == 1 and "FRED [PERSON]" in prompts[0] and "SCROOGE'S NEPHEW [PERSON]" in prompts[0]
    assert openai_server.stats()["counts"].get("embeddings", 0) == 1


def test_a_failed_call_fails_the_step_after_caching_the_others(openai_server, tmp_path: Path) -> None:
    from graphrag_assets.core.errors import LLMError

    settings = settings_for(openai_server, tmp_path)
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer())
    openai_server.add_fault("status", status=400, message="bad request", match="MARLEY'S GHOST")
    with pytest.raises(LLMError, match="1 of 2 entity-resolution calls failed"):
        resolve(settings, SCROOGE)
    openai_server.reset()
    openai_server.add_rule(re.escape(PROMPT_HEAD), groups_answer())
    resolve(settings, SCROOGE)
    assert len(verdict_calls(openai_server)) == 1  # only the failed group is asked again


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"groups": [{"members": [1, 3], "confidence": 0.7, "reason": "r"}]}', [([0, 2], 0.7, "r")]),
        (
            '{"groups": [{"members": [1, 9]}, {"members": [2]}, {"members": "1,2"}]}',
            [],
        ),  # out of range, too small, not a list
        (
            '{"groups": [{"members": [1, 2]}, {"members": [2, 3]}]}',
            [([0, 1], 1.0, "")],
        ),  # an entity in two groups: the first wins
        ('{"groups": [{"members": [1, 2], "confidence": "high"}]}', [([0, 1], 1.0, "")]),
        ('{"groups": []}', []),
        ('{"duplicates": [[1, 2]]}', None),
        ("no", None),
    ],
)
def test_answers_are_read_tolerantly_and_unusable_ones_recognised(answer: str, expected) -> None:
    assert parse_groups(answer, 3) == expected
