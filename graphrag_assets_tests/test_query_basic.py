"""Basic search: similarity order (not table order), token budget, prompt, no-LLM mode."""

from __future__ import annotations

import asyncio
import json

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.basic_search import basic_search
from graphrag_assets.query.engine import run_query
from graphrag_assets_tests.test_query_local import (
    TU,
    ScriptedChat,
    ScriptedEmbedder,
    filler,
    make_index,
    request,
    with_unit_text,
)

QUESTION = "What does unit five say?"
# similarity to (1, 0) falls along this list; "ghost" is not in the text unit table
INDEX_ORDER = [TU[5], TU[2], TU[7], "ghost", TU[0], TU[1], TU[3]]


def data():
    index = make_index()
    index.text_unit_text = ArrayVectorIndex(INDEX_ORDER, [[1.0, 0.2 * i] for i in range(len(INDEX_ORDER))])
    return index


def run(chat, k=6, max_context_tokens=500, **kwargs):
    settings = QuerySettings.model_validate(
        {"basic": {"k": k, "max_context_tokens": max_context_tokens, "mode": "vector"}}
    )
    return asyncio.run(
        basic_search(request(QUESTION, data(), chat, ScriptedEmbedder(default=(1.0, 0.0)), settings, **kwargs))
    )


def test_sources_in_similarity_order_within_the_budget():
    chat = ScriptedChat({"query_basic": "Unit five says t5w0 [Data: Sources (x)]."})
    result = run(chat)
    # k=6 hits: 5, 2, 7, ghost (skipped), 0, 1 -> five rows of 100 words; the fifth would make 502 > 500
    assert result.context_text == "\n".join(
        ["-----Sources-----", "id|text", *(f"{short_id(TU[i])}|{filler(f't{i}w', 100)}" for i in (5, 2, 7, 0))]
    )
    assert result.context_records.citations("sources") == [short_id(TU[i]) for i in (5, 2, 7, 0)]
    assert result.details["sources_offered"] == 5 and result.details["sources_used"] == 4
    assert list(result.details["scores"]) == [short_id(TU[i]) for i in (5, 2, 7, 0)]


def test_k_limits_the_hits():
    result = run(ScriptedChat({"query_basic": "ok"}), k=2, max_context_tokens=12000)
    assert result.context_records.citations("sources") == [short_id(TU[5]), short_id(TU[2])]


def test_basic_prompt_and_answer():
    chat = ScriptedChat({"query_basic": "Unit five says t5w0."})
    result = run(chat, response_type="One line")
    (call,) = chat.calls
    assert call.purpose == "query_basic" and not call.use_cache
    assert call.messages[1] == {"role": "user", "content": QUESTION}
    assert result.context_text in call.messages[0]["content"] and "One line" in call.messages[0]["content"]
    assert "[Data: Sources (" in call.messages[0]["content"]
    assert result.answer == "Unit five says t5w0." and result.llm_used
    assert result.usage.embedding_calls == 1 and result.usage.chat_calls == 1
    assert json.loads(json.dumps(result.to_dict()))["context_records"]["sources"][0] == {
        "id": TU[5],
        "human_readable_id": 5,
        "citation": short_id(TU[5]),
        "title": "doc.txt",
    }


def test_basic_through_run_query_streams():
    chat = ScriptedChat({"query_basic": "a streamed answer"})
    tokens: list[str] = []
    result = asyncio.run(
        run_query(
            request(
                QUESTION,
                data(),
                chat,
                ScriptedEmbedder(default=(1.0, 0.0)),
                QuerySettings(),
                method="basic",
                on_token=tokens.append,
                count=None,
            )
        )
    )
    assert "".join(tokens) == result.answer == "a streamed answer "
    assert result.method == "basic" and chat.calls[0].streamed


def test_basic_no_llm_mode():
    from graphrag_assets.query.extractive import HEADER

    index = with_unit_text(data(), 7, filler("t7w", 94) + ". Unit five is mentioned here too.")
    index = with_unit_text(
        index, 5, filler("t5w", 89) + ". The harbour closed in winter. Unit five says the ferry stopped."
    )
    settings = QuerySettings.model_validate({"basic": {"k": 6, "max_context_tokens": 500, "mode": "vector"}})
    result = asyncio.run(basic_search(request(QUESTION, index, None, ScriptedEmbedder(default=(1.0, 0.0)), settings)))
    assert result.llm_used is False and result.usage.chat_calls == 0
    assert result.answer.startswith(HEADER)
    assert f"Unit five says the ferry stopped. [Data: Sources ({short_id(TU[5])})]" in result.answer
    assert f"Unit five is mentioned here too. [Data: Sources ({short_id(TU[7])})]" in result.answer
    assert result.context_records.citations("sources") == [short_id(TU[i]) for i in (5, 2, 7, 0)]
