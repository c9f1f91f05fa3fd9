"""Local search on a hand-made index: entity mapping, ranking, budgets, history, prompts, no-LLM mode.

Token counts in these tests are words (``len(text.split())``), so every budget cut below can be
checked by hand. The index builder and the scripted models are imported by the other query tests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import polars as pl
import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.ids import entity_id, relationship_id, short_id, stable_uuid, text_unit_id
from graphrag_assets.core.schemas import (
    COMMUNITIES,
    COMMUNITY_REPORTS,
    COVARIATES,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    TEXT_UNITS,
    conform,
)
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.llm.types import ChatOptions, ChatResult, Message
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.context_tables import fill_table
from graphrag_assets.query.engine import load_query_prompts, run_query
from graphrag_assets.query.local_search import local_search, map_entities
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.request import QueryOptions, SearchRequest


def words(text: str) -> int:
    return len(text.split())


OPTION_FIELDS = {f.name for f in fields(QueryOptions)}


def request(question, data, chat, embedder, settings, **kwargs) -> SearchRequest:
    """A search request; keyword arguments that name a QueryOptions field go into the options."""
    options = QueryOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in OPTION_FIELDS})
    return SearchRequest(question, data, settings, chat, embedder, options, count=kwargs.pop("count", words), **kwargs)


def filler(tag: str, n: int) -> str:
    """``n`` words, recognisable by ``tag``."""
    return " ".join(f"{tag}{i}" for i in range(n))


# --- scripted models (stand-ins for the external model servers) ----------------------------------


@dataclass
class Call:
    purpose: str
    messages: list[Message]
    json_mode: bool
    use_cache: bool
    prompt_version: str
    streamed: bool


Answer = str | Callable[[Sequence[Message]], str]


class ScriptedChat:
    """Answers by purpose (a string, or a function of the messages) and records every call."""

    model = "scripted-chat"

    def __init__(self, answers: dict[str, Answer]):
        self.answers = answers
        self.calls: list[Call] = []

    def _answer(self, messages: Sequence[Message], purpose: str) -> str:
        answer = self.answers[purpose]
        return answer(messages) if callable(answer) else answer

    async def chat(self, messages, *, purpose, options=None) -> ChatResult:
        options = options or ChatOptions()
        self.calls.append(
            Call(purpose, list(messages), options.json_mode, options.use_cache, options.prompt_version, streamed=False)
        )
        await asyncio.sleep(0)
        return ChatResult(self._answer(messages, purpose), prompt_tokens=100, completion_tokens=10, cached=False)

    async def stream(self, messages, *, purpose, options=None):
        self.calls.append(Call(purpose, list(messages), False, False, "", streamed=True))
        for part in self._answer(messages, purpose).split(" "):
            await asyncio.sleep(0)
            yield part + " "

    def purposes(self) -> list[str]:
        return [c.purpose for c in self.calls]

    def calls_for(self, purpose: str) -> list[Call]:
        return [c for c in self.calls if c.purpose == purpose]


class ScriptedEmbedder:
    """Vectors by exact text (default: ``default``); records the texts it was asked to embed."""

    model = "scripted-embed"

    def __init__(self, vectors: dict[str, list[float]] | None = None, default: Sequence[float] = (1.0, 0.0, 0.0, 0.0)):
        self.vectors = vectors or {}
        self.default = list(default)
        self.texts: list[str] = []

    async def embed(self, texts, *, purpose):
        self.texts.extend(texts)
        return [list(self.vectors.get(t, self.default)) for t in texts]


# --- the hand-made index -------------------------------------------------------------------------

TITLES = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET", "KILO", "LIMA"]
DOC_ID = stable_uuid("document", "doc")
TU = [text_unit_id(DOC_ID, i, f"unit {i}") for i in range(8)]
MISSING_TU = text_unit_id(DOC_ID, 99, "gone")
REPORT_TEXT = {c: filler(f"r{c}w", 70) for c in range(4)}
RELATIONSHIP_TEXT = {i: filler(f"rel{i}w", 60) for i in range(9)}

# (source, target, combined_degree, text units)
RELATIONSHIP_ROWS = [
    ("ALPHA", "BRAVO", 7, [TU[2]]),  # 0 in-network
    ("BRAVO", "CHARLIE", 9, [TU[5]]),  # 1 in-network
    ("ALPHA", "DELTA", 5, [TU[2], TU[3]]),  # 2 out: DELTA links to ALPHA and BRAVO
    ("BRAVO", "DELTA", 4, [TU[5]]),  # 3 out: DELTA
    ("CHARLIE", "ECHO", 10, [TU[7]]),  # 4 out: ECHO links to one selected entity
    ("ALPHA", "FOXTROT", 3, [TU[3]]),  # 5 out: FOXTROT, one link
    ("GOLF", "HOTEL", 20, [TU[0]]),  # 6 unrelated to the selection
    ("CHARLIE", "ALPHA", 7, [TU[3]]),  # 7 in-network, ties with 0 on combined degree
    ("INDIA", "JULIET", 2, [TU[0]]),  # 8 unrelated
]
ENTITY_UNITS = {"ALPHA": [TU[1], TU[2], TU[3]], "BRAVO": [TU[2], TU[4], TU[5], MISSING_TU], "CHARLIE": [TU[6], TU[7]]}


def make_index() -> QueryData:
    degree = {t: 0 for t in TITLES}
    for source, target, *_ in RELATIONSHIP_ROWS:
        degree[source] += 1
        degree[target] += 1
    entities = pl.DataFrame(
        {
            "id": [entity_id(t) for t in TITLES],
            "human_readable_id": list(range(len(TITLES))),
            "title": TITLES,
            "type": ["THING"] * len(TITLES),
            "description": [filler(t.lower(), 10) for t in TITLES],
            "text_unit_ids": [ENTITY_UNITS.get(t, [TU[0]]) for t in TITLES],
            "frequency": [1] * len(TITLES),
            "degree": [degree[t] for t in TITLES],
            "aliases": [[] for _ in TITLES],
        },
        schema=ENTITIES,
    )
    relationships = pl.DataFrame(
        {
            "id": [relationship_id(s, t) for s, t, *_ in RELATIONSHIP_ROWS],
            "human_readable_id": list(range(len(RELATIONSHIP_ROWS))),
            "source": [r[0] for r in RELATIONSHIP_ROWS],
            "target": [r[1] for r in RELATIONSHIP_ROWS],
            "description": [RELATIONSHIP_TEXT[i] for i in range(len(RELATIONSHIP_ROWS))],
            "weight": [1.0 + i for i in range(len(RELATIONSHIP_ROWS))],
            "combined_degree": [r[2] for r in RELATIONSHIP_ROWS],
            "text_unit_ids": [r[3] for r in RELATIONSHIP_ROWS],
        },
        schema=RELATIONSHIPS,
    )
    # community: (level, parent, children, members)
    tree = {
        0: (0, -1, [2], ["ALPHA", "BRAVO", "DELTA", "ECHO", "FOXTROT"]),
        1: (0, -1, [3], ["CHARLIE", "GOLF", "HOTEL", "INDIA"]),
        2: (1, 0, [], ["ALPHA", "BRAVO"]),
        3: (1, 1, [], ["CHARLIE", "GOLF"]),  # no report
    }
    communities = conform(
        pl.DataFrame(
            {
                "id": [stable_uuid("community", c) for c in tree],
                "human_readable_id": list(tree),
                "community": list(tree),
                "level": [v[0] for v in tree.values()],
                "parent": [v[1] for v in tree.values()],
                "children": [v[2] for v in tree.values()],
                "title": [f"Community {c}" for c in tree],
                "entity_ids": [[entity_id(t) for t in v[3]] for v in tree.values()],
                "size": [len(v[3]) for v in tree.values()],
            },
            schema_overrides={"children": pl.List(pl.Int64)},
        ),
        COMMUNITIES,
    )
    ranks = {0: 5.0, 1: 9.0, 2: 8.0}
    reports = conform(
        pl.DataFrame(
            {
                "id": [stable_uuid("report", c) for c in ranks],
                "human_readable_id": list(ranks),
                "community": list(ranks),
                "level": [tree[c][0] for c in ranks],
                "parent": [tree[c][1] for c in ranks],
                "children": [tree[c][2] for c in ranks],
                "title": [f"Report {c}" for c in ranks],
                "summary": [f"summary of report {c}" for c in ranks],
                "full_content": [REPORT_TEXT[c] for c in ranks],
                "rank": list(ranks.values()),
            },
            schema_overrides={"children": pl.List(pl.Int64)},
        ),
        COMMUNITY_REPORTS,
    )
    text_units = conform(
        pl.DataFrame(
            {
                "id": TU,
                "human_readable_id": list(range(8)),
                "text": [filler(f"t{i}w", 100) for i in range(8)],
                "document_id": [DOC_ID] * 8,
            }
        ),
        TEXT_UNITS,
    )
    covariates = conform(
        pl.DataFrame(
            {
                "id": [stable_uuid("claim", 0), stable_uuid("claim", 1)],
                "human_readable_id": [0, 1],
                "covariate_type": ["claim", "claim"],
                "type": ["FRAUD", "GIFT"],
                "description": ["alpha did a thing", "golf did a thing"],
                "subject_id": ["ALPHA", "GOLF"],
                "object_id": ["NONE", "NONE"],
                "status": ["TRUE", "TRUE"],
            }
        ),
        COVARIATES,
    )
    documents = conform(pl.DataFrame({"id": [DOC_ID], "title": ["doc.txt"], "path": ["doc.txt"]}), DOCUMENTS)
    # entity vectors: similarity to (1, 0, 0, 0) falls along this list; two ids are not in the table
    order = ["ghost-1", "ALPHA", "ghost-2", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL"]
    entity_index = ArrayVectorIndex(
        [o if o.startswith("ghost") else entity_id(o) for o in order],
        [[1.0, 0.1 * i, 0.0, 0.0] for i in range(len(order))],
    )
    return QueryData(
        entities=entities,
        relationships=relationships,
        communities=communities,
        community_reports=reports,
        text_units=text_units,
        covariates=covariates,
        documents=documents,
        entity_description=entity_index,
        text_unit_text=ArrayVectorIndex(TU, [[1.0, 0.3 * i, 0.0, 0.0] for i in range(8)]),
        community_full_content=ArrayVectorIndex(
            [stable_uuid("report", c) for c in ranks],
            [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]],
        ),
    )


def local_settings(**local) -> QuerySettings:
    """Microsoft's ranking and budget split (sources 50%), which these tests check row by row (the graph
    ranking: test_graph_ranking.py)."""
    base = {
        "top_k_entities": 3,
        "top_k_relationships": 1,
        "max_context_tokens": 1000,
        "ranking": "msgraphrag",
        "text_unit_prop": 0.5,
    }
    return QuerySettings.model_validate({"local": {**base, **local}})


def local_settings_defaults() -> QuerySettings:
    """The default settings with Microsoft's ranking and budget split."""
    return QuerySettings.model_validate({"local": {"ranking": "msgraphrag", "text_unit_prop": 0.5}})


def run_local(chat, embedder=None, data=None, settings=None, **kwargs):
    return asyncio.run(
        local_search(
            request(
                "What links alpha and bravo?",
                data or make_index(),
                chat,
                embedder or ScriptedEmbedder(),
                settings or local_settings(),
                **kwargs,
            )
        )
    )


def rel_row(i: int) -> str:
    s, t, *_ = RELATIONSHIP_ROWS[i]
    return f"{i}|{s}|{t}|{RELATIONSHIP_TEXT[i]}|{1.0 + i:g}"


def entity_row(i: int) -> str:
    t = TITLES[i]
    degree = sum(t in r[:2] for r in RELATIONSHIP_ROWS)
    return f"{i}|{t}|{filler(t.lower(), 10)}|{degree}"


def unit_row(i: int) -> str:
    return f"{short_id(TU[i])}|{filler(f't{i}w', 100)}"


EXPECTED_CONTEXT = "\n".join(
    [
        "-----Reports-----",
        "id|title|content",
        f"2|Report 2|{REPORT_TEXT[2]}",  # two matched entities, rank 8
        f"0|Report 0|{REPORT_TEXT[0]}",  # two matched entities, rank 5
        "1|Report 1|summary of report 1",  # one match; its full text does not fit, its summary does
        "",
        "-----Entities-----",
        "id|entity|description|number of relationships",
        entity_row(0),
        entity_row(1),
        entity_row(2),
        "",
        "-----Relationships-----",
        "id|source|target|description|weight",
        rel_row(1),  # in-network, combined degree 9
        rel_row(0),  # in-network, 7 (ties with 7, lower id first)
        rel_row(7),
        rel_row(2),  # out-of-network: DELTA links two selected entities, degree 5
        rel_row(3),  # DELTA, 4  (then 4: ECHO, cut by the budget; 5 beyond the cap)
        "",
        "-----Claims-----",
        "id|entity|object|type|status|start date|end date|description",
        "0|ALPHA|NONE|FRAUD|TRUE|||alpha did a thing",
        "",
        "-----Sources-----",
        "id|text",
        unit_row(3),  # ALPHA's units: 3 (3 of its relationships), 2 (2), 1 (0)
        unit_row(2),
        unit_row(1),
        unit_row(5),  # BRAVO's: 5 (2 relationships); 4, then CHARLIE's 7 and 6 are cut
    ]
)


# --- tests ---------------------------------------------------------------------------------------


def test_local_context_exact_rows_order_and_budget_cuts():
    chat = ScriptedChat({"query_local": "ALPHA and BRAVO are linked [Data: Relationships (0)]."})
    result = run_local(chat)
    assert result.context_text == EXPECTED_CONTEXT
    tables = result.details["tables"]
    assert {name: (t["offered"], t["used"]) for name, t in tables.items()} == {
        "Reports": (3, 3),
        "Entities": (3, 3),
        "Relationships": (6, 5),  # 3 in-network + 3 out-of-network (cap 1 x 3 entities)
        "Claims": (1, 1),
        "Sources": (7, 4),  # the missing text unit id is skipped
    }
    # the budget split: 15% reports, 50% sources, 35% entities + relationships + claims
    assert tables["Reports"]["tokens"] == 144 + 5 <= 150  # the third report in full would make 215
    assert tables["Reports"]["shortened"] == 1
    assert tables["Sources"]["tokens"] == 402 <= 500  # a fifth unit would make 502
    assert (
        tables["Entities"]["tokens"] + tables["Relationships"]["tokens"] + tables["Claims"]["tokens"]
        == 34 + 302 + 8
        <= 350
    )
    records = result.context_records
    assert records.citations("reports") == ["2", "0", "1"]
    assert records.citations("entities") == ["0", "1", "2"]
    assert records.citations("relationships") == ["1", "0", "7", "2", "3"]
    assert records.citations("claims") == ["0"]
    assert records.citations("sources") == [short_id(TU[i]) for i in (3, 2, 1, 5)]
    assert records.ids("entities") == [entity_id(t) for t in ("ALPHA", "BRAVO", "CHARLIE")]
    assert [r.title for r in records.sources] == ["doc.txt"] * 4


def test_fill_table_prefix_and_shorter_rows():
    rows = [("a", "x " * 5), ("b", "y " * 50), ("c", "z")]
    table = fill_table("T", ("id", "text"), rows, 20, words)
    assert (table.rows_used, table.text) == (1, "-----T-----\nid|text\na|x x x x x")  # "c" would fit, but "b" stops it
    table = fill_table("T", ("id", "text"), rows, 20, words, shorter=[None, ("b", "short"), None])
    assert table.text == "-----T-----\nid|text\na|x x x x x\nb|short\nc|z" and table.shortened == [1]
    table = fill_table("T", ("id", "text"), rows, 8, words, shorter=[None, ("b", "still too long"), None])
    assert (table.rows_used, table.shortened, table.tokens) == (1, [], 7)
    assert fill_table("T", ("id", "text"), rows, 3, words).text == ""


def test_local_maps_exactly_k_entities_skipping_ids_missing_from_the_table():
    result = run_local(ScriptedChat({"query_local": "ok"}))
    assert result.details["mapped_entities"] == ["ALPHA", "BRAVO", "CHARLIE"]  # not DELTA, though among the 2k hits
    assert result.warnings == []


def test_map_entities_keeps_hit_order_and_stops_at_k():
    data = make_index()
    hits = [("ghost", 0.9), (entity_id("DELTA"), 0.8), (entity_id("ALPHA"), 0.7), (entity_id("KILO"), 0.6)]
    assert map_entities(hits, data.entities, 2)["title"].to_list() == ["DELTA", "ALPHA"]
    assert map_entities(hits, data.entities, 10)["title"].to_list() == ["DELTA", "ALPHA", "KILO"]


def test_local_community_level_limits_the_reports():
    result = run_local(ScriptedChat({"query_local": "ok"}), community_level=0)
    # level-1 report 2 is out; report 0 (2 matches) then report 1 (1 match) fill the 150-token share
    assert result.context_records.citations("reports") == ["0", "1"]


def test_local_prompt_messages_and_answer():
    chat = ScriptedChat({"query_local": "ALPHA and BRAVO are linked [Data: Relationships (0)]."})
    result = run_local(chat, response_type="One sentence")
    assert chat.purposes() == ["query_local"]
    call = chat.calls[0]
    assert [m["role"] for m in call.messages] == ["system", "user"]
    assert call.messages[1]["content"] == "What links alpha and bravo?"
    assert EXPECTED_CONTEXT in call.messages[0]["content"]
    assert "One sentence" in call.messages[0]["content"]
    assert "[Data: Reports" in call.messages[0]["content"]  # the prompt asks for our citation format
    assert call.use_cache is False and call.prompt_version
    assert result.answer == "ALPHA and BRAVO are linked [Data: Relationships (0)]."
    assert result.llm_used is True
    assert (result.usage.chat_calls, result.usage.prompt_tokens, result.usage.completion_tokens) == (1, 100, 10)
    assert result.usage.embedding_calls == 1
    json.dumps(result.to_dict())


def test_local_streams_the_answer_and_estimates_tokens():
    chat = ScriptedChat({"query_local": "streamed answer here"})
    tokens: list[str] = []
    result = run_local(chat, on_token=tokens.append)
    assert "".join(tokens) == result.answer == "streamed answer here "
    assert chat.calls[0].streamed
    assert result.usage.completion_tokens == 3  # estimated with the (word) counter
    assert result.usage.prompt_tokens == words(chat.calls[0].messages[0]["content"]) + 5


def test_local_conversation_history():
    history = [
        {"role": "user", "content": "Q1 first"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2 second"},
        {"role": "assistant", "content": "A2"},
        {"role": "user", "content": "Q3 third"},
    ]
    embedder = ScriptedEmbedder()
    chat = ScriptedChat({"query_local": "ok"})
    result = run_local(
        chat, embedder, settings=local_settings(conversation_history_max_turns=2), conversation_history=history
    )
    # embedded: the question, then the previous user questions, most recent first, at most 2
    assert embedder.texts == ["What links alpha and bravo?\nQ3 third\nQ2 second"]
    assert result.context_text.startswith(
        "-----Conversation History-----\nturn|content\nuser|Q2 second\nuser|Q3 third\n\n-----Reports-----"
    )
    # the history's 7 tokens come off the budget first: the report share drops from 150 to
    # floor(993 * 0.15) = 148, so report 1's summary (149 in all) no longer fits; the rest is unchanged
    assert result.details["tables"]["Reports"]["used"] == 2
    expected_rest = EXPECTED_CONTEXT.replace("1|Report 1|summary of report 1\n", "")
    assert result.context_text.endswith(expected_rest)
    # the history is context, not chat turns: the model still gets system + the question only
    assert [m["role"] for m in chat.calls[0].messages] == ["system", "user"]


def test_local_history_turns_zero_ignores_history():
    embedder = ScriptedEmbedder()
    result = run_local(
        ScriptedChat({"query_local": "ok"}),
        embedder,
        settings=local_settings(conversation_history_max_turns=0),
        conversation_history=[{"role": "user", "content": "earlier"}],
    )
    assert embedder.texts == ["What links alpha and bravo?"]
    assert result.context_text == EXPECTED_CONTEXT


def test_local_default_budget_with_real_tokenizer_keeps_everything_ranked():
    data = make_index()
    result = asyncio.run(
        local_search(
            request(
                "q",
                data,
                ScriptedChat({"query_local": "ok"}),
                ScriptedEmbedder(),
                local_settings_defaults(),
                count=None,
            )
        )
    )
    # defaults: 10 entities (all 8 indexed real ones), no cuts at 12000 tokens
    assert result.details["mapped_entities"] == [
        "ALPHA",
        "BRAVO",
        "CHARLIE",
        "DELTA",
        "ECHO",
        "FOXTROT",
        "GOLF",
        "HOTEL",
    ]
    assert result.details["tables"]["Sources"]["used"] == result.details["tables"]["Sources"]["offered"]
    # report 0 holds 5 mapped entities, report 1 holds 3, report 2 holds 2
    assert result.context_records.citations("reports") == ["0", "1", "2"]


def with_unit_text(data: QueryData, index: int, text: str) -> QueryData:
    data.text_units = data.text_units.with_columns(
        pl.when(pl.col("id") == TU[index]).then(pl.lit(text)).otherwise(pl.col("text")).alias("text")
    )
    return data


def test_local_no_llm_mode_extractive_answer():
    from graphrag_assets.query.extractive import HEADER

    data = with_unit_text(make_index(), 3, filler("t3w", 91) + ". Alpha and bravo are linked by the old bridge.")
    result = run_local(None, data=data)
    assert result.llm_used is False and result.usage.chat_calls == 0
    assert result.answer.startswith(HEADER)  # says plainly that no language model was used
    assert f"Alpha and bravo are linked by the old bridge. [Data: Sources ({short_id(TU[3])})]" in result.answer
    # the same ranked context as with a model
    assert result.context_records.citations("sources") == [short_id(TU[i]) for i in (3, 2, 1, 5)]
    assert result.context_text.startswith(EXPECTED_CONTEXT.split("-----Sources-----")[0])
    json.dumps(result.to_dict())


def test_run_query_validates_requests():
    data, settings = make_index(), local_settings()
    with pytest.raises(UserError, match="unknown query method"):
        asyncio.run(run_query(request("q", data, None, ScriptedEmbedder(), settings, method="fancy")))
    with pytest.raises(UserError, match="empty"):
        asyncio.run(run_query(request("  ", data, None, ScriptedEmbedder(), settings, method="local")))
    with pytest.raises(UserError, match="embedding model"):
        asyncio.run(run_query(request("q", data, None, None, settings, method="local")))
    with pytest.raises(UserError, match="no query prompt named"):
        load_query_prompts({"nope": "x.txt"})
    long = "why " * 3000
    with pytest.raises(
        UserError, match=r"the question is 3,000 tokens long and the limit is 2,000 \(query.max_question_tokens\)"
    ):
        asyncio.run(run_query(request(long, data, None, ScriptedEmbedder(), settings, method="drift")))


def test_run_query_with_a_user_prompt_file(tmp_path):
    (tmp_path / "mine.txt").write_text("MY PROMPT {response_type}\n{context_data}", encoding="utf-8")
    chat = ScriptedChat({"query_local": "ok"})
    result = asyncio.run(
        run_query(
            request(
                "What links alpha and bravo?",
                make_index(),
                chat,
                ScriptedEmbedder(),
                local_settings(),
                method="local",
                prompts=load_query_prompts({"local_search": "mine.txt"}, tmp_path),
            )
        )
    )
    assert chat.calls[0].messages[0]["content"].startswith("MY PROMPT Multiple Paragraphs\n-----")
    assert result.method == "local"
    (tmp_path / "bad.txt").write_text("no placeholder here", encoding="utf-8")
    with pytest.raises(UserError, match="context_data"):
        asyncio.run(
            run_query(
                request(
                    "q",
                    make_index(),
                    chat,
                    ScriptedEmbedder(),
                    local_settings(),
                    method="local",
                    prompts=load_query_prompts({"local_search": "bad.txt"}, tmp_path),
                )
            )
        )
