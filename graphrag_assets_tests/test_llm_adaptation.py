"""The client adapting to each kind of server, call by call, through the real ``openai`` client and
the emulated servers: what it sends after a refusal, what it records, what it tells the user."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import time
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest

from graphrag_assets.core import progress
from graphrag_assets.core.errors import LLMError
from graphrag_assets.core.settings import EmbeddingSettings, LLMSettings
from graphrag_assets.core.tokens import count_tokens
from graphrag_assets.index.graph_extraction import ExtractionPlan, extract_graph_records, graph_prompts
from graphrag_assets.llm import capabilities, client
from graphrag_assets.llm.answers import ThinkFilter, repair_json_answer, strip_think
from graphrag_assets.llm.capabilities import stored_capabilities
from graphrag_assets.llm.embeddings import decode_vector
from graphrag_assets.llm.factory import build_chat_model, build_embedding_model
from graphrag_assets.llm.fitting import parse_overflow, shrink_messages
from graphrag_assets.llm.retry import MalformedResponse
from graphrag_assets.llm.types import ChatOptions, JsonSchema
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets_testkit.openai_server import embedding_vector
from graphrag_assets_testkit.server_profiles import ProfileSpec
from graphrag_assets_tests.profile_servers import AZURE_KEY, OPENAI_KEY, RESPONDER, VLLM_KEY

SCHEMA = JsonSchema("ready", {"type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]})


@pytest.fixture(autouse=True)
def fresh_process_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts like a new process: nothing learned, nothing told yet."""
    monkeypatch.setattr(capabilities, "_MEMORY", {})
    monkeypatch.setattr(client, "_warned", set())


@pytest.fixture
def warnings() -> Any:
    told: list[str] = []
    progress.set_warning_listener(told.append)
    yield told
    progress.set_warning_listener(None)


def settings(url: str, **values: Any) -> LLMSettings:
    base = {
        "base_url": url,
        "max_retries": 1,
        "retry_base_delay": 0.01,
        "retry_max_delay": 0.05,
        "request_timeout": 10,
        "embeddings": "openai",
    }
    return LLMSettings(**{**base, **values})


def chat(model: Any, text: str, **options: Any) -> Any:
    return asyncio.run(model.chat([{"role": "user", "content": text}], purpose="test", options=ChatOptions(**options)))


def stream(model: Any, text: str) -> str:
    async def go() -> str:
        return "".join([piece async for piece in model.stream([{"role": "user", "content": text}], purpose="answer")])

    return asyncio.run(go())


def embed(model: Any, texts: list[str]) -> list[list[float]]:
    return asyncio.run(model.embed(texts, purpose="embed"))


def outcomes(server: Any) -> list[tuple[str, int | None]]:
    return [(c["outcome"], c.get("status")) for c in server.calls("chat")]


# -- OpenAI reasoning models ---------------------------------------------------------------------


def test_a_reasoning_model_gets_max_completion_tokens_and_no_temperature_learned_once(
    profile_servers, tmp_path, warnings
):
    server = profile_servers["reasoning"]
    server.reset()
    db = tmp_path / "graphrag.duckdb"
    duckdb.connect(str(db)).close()  # the project's database (indexing creates it; model calls never do)
    meter = UsageMeter()
    model = build_chat_model(settings(server.base_url, api_key=OPENAI_KEY, chat_model="o4-mini"), db, meter)
    assert chat(model, "Reply with the single word: ready", max_tokens=50).text == "ready"
    assert outcomes(server) == [("refused", 400), ("refused", 400), ("answered", None)]
    sent = server.calls("chat")[-1]["body"]
    assert sent["max_completion_tokens"] == 50 and "max_tokens" not in sent and "temperature" not in sent
    notes = meter.notes()
    assert notes[("o4-mini", "max_tokens_refused")] == 1 and notes[("o4-mini", "temperature_refused")] == 1
    assert notes[("o4-mini", "reasoning_tokens")] == 64
    assert meter.totals().requests == 1 and meter.totals().retries == 0 and meter.totals().failures == 0
    assert any("refuses max_tokens; sending max_completion_tokens instead" in w for w in warnings)
    model.close()
    # a new process on the same project asks right the first time
    capabilities._MEMORY.clear()
    again = build_chat_model(settings(server.base_url, api_key=OPENAI_KEY, chat_model="o4-mini"), db, UsageMeter())
    server.reset()
    chat(again, "Reply with the single word: ready", max_tokens=50, use_cache=False)
    assert outcomes(server) == [("answered", None)]
    known = stored_capabilities(db)[(server.base_url, "o4-mini", "chat")]
    assert known.token_limit_parameter == "max_completion_tokens" and known.temperature is False
    again.close()


# -- Azure OpenAI --------------------------------------------------------------------------------


def azure_model(server: Any, version: str = "2024-10-21", meter: UsageMeter | None = None) -> Any:
    values = {"api_key": AZURE_KEY, "api_version": version, "chat_model": "gpt-4o-mini"}
    return build_chat_model(settings(server.root_url, **values), None, meter or UsageMeter())


def test_azure_deployment_urls_and_content_filter_refusals(profile_servers):
    server = profile_servers["azure"]
    server.reset()
    model = azure_model(server)
    assert chat(model, "Reply with the single word: ready").text == "ready"
    [call] = server.calls("chat")
    assert call["path"] == "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
    assert call["headers"]["api-key"] == AZURE_KEY and "authorization" not in call["headers"]
    with pytest.raises(LLMError) as refused:
        chat(model, "Tell me about FORBIDDEN-TOPIC.")
    assert refused.value.kind == "content_filter"
    assert str(refused.value) == (
        f"the chat endpoint {server.root_url} (model 'gpt-4o-mini') refused the prompt because its content filter flagged "
        "it: hate: medium; remove that text from the input or ask the resource's owner to adjust the deployment's content filter."
    )
    assert [c["outcome"] for c in server.calls("chat")][-1] == "refused"  # not retried: it cannot succeed
    model.close()


def test_an_answer_withheld_by_azures_filter_is_empty_and_counted(profile_servers):
    server = profile_servers["azure"]
    server.reset()
    server.add_rule("withheld", "FILTERED-ANSWER")
    meter = UsageMeter()
    model = azure_model(server, meter=meter)
    assert chat(model, "withheld").text == ""
    assert meter.notes()[("gpt-4o-mini", "answers_filtered")] == 1
    model.close()


def test_an_older_azure_api_version_falls_back_from_json_schema_and_stream_options(profile_servers):
    server = profile_servers["azure"]
    server.reset()
    meter = UsageMeter()
    model = azure_model(server, "2024-06-01", meter)
    assert json.loads(chat(model, "Reply with a JSON object, please", json_schema=SCHEMA).text) == {"ready": True}
    assert stream(model, "Reply with the single word: ready") == "ready"
    bodies = [
        (c["outcome"], (c["body"].get("response_format") or {}).get("type"), "stream_options" in c["body"])
        for c in server.calls("chat")
    ]
    assert bodies == [
        ("refused", "json_schema", False),
        ("answered", "json_object", False),
        ("refused", None, True),
        ("answered", None, False),
    ]
    known = model.capabilities
    assert known.json_schema == "rejected" and known.json_object == "honoured" and known.stream_usage == "rejected"
    assert meter.snapshot()[("answer", "gpt-4o-mini")].prompt_tokens > 0  # counted with the tokenizer
    model.close()


# -- Ollama --------------------------------------------------------------------------------------


def test_ollama_think_blocks_are_removed_from_answers_and_streams(profile_servers, warnings):
    server = profile_servers["ollama"]
    server.reset()
    meter = UsageMeter()
    model = build_chat_model(settings(server.base_url, chat_model="qwen3:8b"), None, meter)
    assert chat(model, "Reply with the single word: ready").text == "ready"
    assert server.calls("chat")[0]["reply"].startswith("<think>\n")
    assert stream(model, "Reply with the single word: ready") == "ready"
    assert model.capabilities.think_blocks and model.capabilities.stream_usage == "ignored"
    assert meter.notes()[("qwen3:8b", "think_blocks_stripped")] == 2
    assert sum(1 for w in warnings if "<think> block" in w) == 1  # told once
    model.close()


def test_a_json_schema_ollama_ignores_is_repaired_into_json(profile_servers):
    server = profile_servers["ollama"]
    server.reset()
    meter = UsageMeter()
    model = build_chat_model(settings(server.base_url, chat_model="qwen3:8b"), None, meter)
    answer = chat(model, "Reply with a JSON object, please", json_schema=SCHEMA).text
    assert json.loads(answer) == {"ready": True}
    assert "```json" in server.calls("chat")[0]["reply"]
    assert model.capabilities.json_schema == "ignored" and meter.notes()[("qwen3:8b", "json_repaired")] == 1
    model.close()


def test_a_slow_first_answer_is_waited_for_within_the_timeout(openai_server_factory):
    server = openai_server_factory(responder=RESPONDER, profile=ProfileSpec("ollama", load_seconds=1.5))
    patient = build_chat_model(settings(server.base_url, chat_model="qwen3:8b", request_timeout=5), None, UsageMeter())
    started = time.monotonic()
    assert chat(patient, "Reply with the single word: ready").text == "ready"
    assert time.monotonic() - started >= 1.5
    patient.close()


def test_a_model_slower_than_the_timeout_says_which_setting_to_raise(openai_server_factory):
    server = openai_server_factory(responder=RESPONDER, profile=ProfileSpec("ollama", load_seconds=3))
    hasty = build_chat_model(
        settings(server.base_url, chat_model="qwen3:8b", request_timeout=0.5, max_retries=0), None, UsageMeter()
    )
    with pytest.raises(LLMError, match=r"did not answer within 0\.5 s; raise llm\.request_timeout"):
        chat(hasty, "Reply with the single word: ready")
    hasty.close()


# -- vLLM ----------------------------------------------------------------------------------------


def long_prompt(rows: int) -> str:
    lines = ["Answer the question from the table below.", "-----Rows-----", "id|text"]
    lines += [f"{i}|row number {i} tells about the harbour, the lighthouse and the storm" for i in range(rows)]
    lines += ["", "Answer:"]
    return "\n".join(lines)


def test_a_prompt_over_vllms_context_window_is_shortened_to_fit(openai_server_factory, warnings):
    server = openai_server_factory(profile=ProfileSpec("vllm", api_key=VLLM_KEY, options={"max_model_len": 600}))
    meter = UsageMeter()
    model = build_chat_model(
        settings(server.base_url, api_key=VLLM_KEY, chat_model="Qwen/Qwen2.5-7B-Instruct"), None, meter
    )
    prompt = long_prompt(60)
    assert chat(model, prompt).text.startswith("echo: Answer the question")
    refused, answered = server.calls("chat")
    assert refused["outcome"] == "refused" and answered["outcome"] == "answered"
    sent = answered["body"]["messages"][0]["content"]
    assert sent.startswith("Answer the question from the table below.\n-----Rows-----\nid|text\n0|row number 0")
    assert sent.endswith("\n\nAnswer:") and len(sent) < len(prompt)
    assert answered["usage"]["prompt_tokens"] < 600
    assert (
        model.capabilities.context_window == 600
        and meter.notes()[("Qwen/Qwen2.5-7B-Instruct", "prompts_shortened")] == 1
    )
    assert any("exceed its context window of 600 tokens" in w for w in warnings)
    model.close()


def test_a_prompt_far_over_the_window_fails_with_one_sentence(openai_server_factory):
    server = openai_server_factory(profile=ProfileSpec("vllm", options={"max_model_len": 100}))
    model = build_chat_model(settings(server.base_url, chat_model="Qwen/Qwen2.5-7B-Instruct"), None, UsageMeter())
    with pytest.raises(LLMError) as error:
        chat(model, long_prompt(200))
    assert error.value.kind == "context_length"
    assert str(error.value).startswith(
        f"the chat endpoint {server.base_url} (model 'Qwen/Qwen2.5-7B-Instruct') rejected a "
        "prompt longer than the model's context window, even shortened: This model's maximum"
    )
    model.close()


# -- embeddings ----------------------------------------------------------------------------------


def test_refused_dimensions_are_dropped_and_remembered(openai_server_factory):
    server = openai_server_factory(profile=ProfileSpec("no-dimensions", options={"refuse": True}))
    model = build_embedding_model(
        settings(server.base_url, embedding_dimensions=32), EmbeddingSettings(), None, UsageMeter()
    )
    assert [len(v) for v in embed(model, ["harbour", "storm"])] == [64, 64]
    assert embed(model, ["lighthouse"]) and model.capabilities.dimensions == "rejected"
    calls = server.calls("embeddings")
    assert [("dimensions" in c["body"], c["outcome"]) for c in calls] == [
        (True, "refused"),
        (False, "answered"),
        (False, "answered"),
    ]
    model.close()


def test_ignored_dimensions_are_noticed(profile_servers):
    server = profile_servers["no-dimensions"]
    model = build_embedding_model(
        settings(server.base_url, embedding_dimensions=32), EmbeddingSettings(), None, UsageMeter()
    )
    assert len(embed(model, ["harbour"])[0]) == 64 and model.capabilities.dimensions == "ignored"
    model.close()


def test_base64_vectors_are_decoded(profile_servers):
    server = profile_servers["base64"]
    model = build_embedding_model(
        settings(server.base_url, api_key=OPENAI_KEY), EmbeddingSettings(), None, UsageMeter()
    )
    [vector] = embed(model, ["the harbour master"])
    expected = embedding_vector("the harbour master", 64)
    assert all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(vector, expected, strict=True))
    assert model.capabilities.base64_embeddings
    model.close()


def float32_vector(text: str) -> np.ndarray:
    return np.float32(embedding_vector(text, 64))


def test_vectors_are_asked_for_as_base64_and_equal_the_float_answer(openai_server):
    texts = ["the harbour master", "a storm over Vellmouth"]
    model = build_embedding_model(settings(openai_server.base_url), EmbeddingSettings(), None, UsageMeter())
    vectors = embed(model, texts)
    model.close()
    [call] = openai_server.calls("embeddings")
    assert call["body"]["encoding_format"] == "base64"
    assert model.capabilities.encoding_format == "honoured" and model.capabilities.base64_embeddings
    assert all(memoryview(v).format == "f" for v in vectors)  # float32 without numpy
    # the same numbers the float form carries, at float32 precision (what DuckDB FLOAT[n] and LanceDB keep)
    np.testing.assert_array_equal(np.stack(vectors), np.stack([float32_vector(t) for t in texts]))


def test_a_server_that_ignores_encoding_format_is_read_as_floats(openai_server_factory):
    server = openai_server_factory(profile=ProfileSpec("float-only"))
    meter = UsageMeter()
    model = build_embedding_model(settings(server.base_url), EmbeddingSettings(batch_size=1), None, meter)
    vectors = embed(model, ["harbour", "storm"])
    model.close()
    assert [c["body"].get("encoding_format") for c in server.calls("embeddings")] == ["base64", "base64"]
    assert model.capabilities.encoding_format == "ignored" and not model.capabilities.base64_embeddings
    assert meter.notes()[("text-embedding-3-small", "base64_ignored")] == 1
    np.testing.assert_array_equal(np.stack(vectors), np.stack([float32_vector("harbour"), float32_vector("storm")]))


@pytest.mark.parametrize(
    "option, note",
    [
        ("refuse", "base64_refused"),  # HTTP 400 naming the parameter
        ("crash", "base64_failed"),  # a bare HTTP 500 (tabbyAPI before its fix)
    ],
)
def test_a_server_that_refuses_base64_is_asked_for_floats_once_and_remembered(
    openai_server_factory, tmp_path, warnings, option, note
):
    server = openai_server_factory(profile=ProfileSpec("float-only", options={option: True}))
    db = tmp_path / "graphrag.duckdb"
    duckdb.connect(str(db)).close()
    meter = UsageMeter()
    model = build_embedding_model(settings(server.base_url), EmbeddingSettings(batch_size=1), db, meter)
    vectors = embed(model, ["harbour", "storm", "lighthouse"])
    model.close()
    calls = server.calls("embeddings")
    refused = [c["body"]["encoding_format"] for c in calls if c["outcome"] == "refused"]
    assert 1 <= len(refused) <= 3 and set(refused) == {"base64"}  # the concurrent first batches; none retried as base64
    assert [c["body"]["encoding_format"] for c in calls if c["outcome"] == "answered"] == ["float"] * 3
    assert meter.notes()[("text-embedding-3-small", note)] == 1
    assert meter.totals().retries == 0 and meter.totals().failures == 0 and warnings == []
    np.testing.assert_array_equal(
        np.stack(vectors), np.stack([float32_vector(t) for t in ["harbour", "storm", "lighthouse"]])
    )
    # a new process on the same project asks for floats the first time
    capabilities._MEMORY.clear()
    server.reset()
    again = build_embedding_model(settings(server.base_url), EmbeddingSettings(), db, UsageMeter())
    embed(again, ["a tide table"])
    again.close()
    assert [(c["outcome"], c["body"]["encoding_format"]) for c in server.calls("embeddings")] == [("answered", "float")]
    assert (
        stored_capabilities(db)[(server.base_url, "text-embedding-3-small", "embedding")].encoding_format == "rejected"
    )


def test_a_500_after_base64_was_answered_is_an_ordinary_server_error(openai_server_factory):
    server = openai_server_factory(profile=ProfileSpec("base64"))
    model = build_embedding_model(settings(server.base_url), EmbeddingSettings(batch_size=1), None, UsageMeter())
    embed(model, ["harbour"])
    server.add_fault(kind="status", status=500, endpoint="embeddings", message="upstream hiccup", times=1)
    embed(model, ["storm"])
    model.close()
    assert [c["body"]["encoding_format"] for c in server.calls("embeddings")] == ["base64"] * 3  # retried as it was
    assert model.capabilities.encoding_format == "honoured"


def test_a_server_refusing_base64_and_dimensions_gets_both_dropped(openai_server_factory):
    server = openai_server_factory(profile=ProfileSpec("float-only", options={"refuse": True}))
    server.add_fault(
        kind="status",
        status=400,
        endpoint="embeddings",
        message="This model does not support specifying dimensions.",
        match="harbour",
        times=1,
    )
    model = build_embedding_model(
        settings(server.base_url, embedding_dimensions=32), EmbeddingSettings(), None, UsageMeter()
    )
    [vector] = embed(model, ["harbour"])
    model.close()
    assert (
        len(vector) == 64
        and model.capabilities.encoding_format == "rejected"
        and model.capabilities.dimensions == "rejected"
    )
    assert [c["outcome"] for c in server.calls("embeddings")] == ["status", "refused", "answered"]


def test_an_embedding_that_is_not_a_vector_is_a_malformed_answer():
    with pytest.raises(MalformedResponse):
        decode_vector("not base64 of float32!")
    with pytest.raises(MalformedResponse):
        decode_vector([[0.1, 0.2]])
    vector, was_base64 = decode_vector(base64.b64encode(np.float32([0.5, -2.0]).tobytes()).decode())
    assert was_base64 and vector.tolist() == [0.5, -2.0]


# -- connecting ----------------------------------------------------------------------------------


def test_a_server_that_goes_away_after_answering_is_retried(openai_server_factory):
    server = openai_server_factory()
    model = build_chat_model(settings(server.base_url, max_retries=2), None, UsageMeter())
    assert chat(model, "hello").text == "echo: hello"
    server.stop()
    with pytest.raises(LLMError, match=r"connection refused after 3 attempts"):
        chat(model, "still there?")
    model.close()


# -- extraction that finds nothing ----------------------------------------------------------------


def test_a_unit_whose_answers_hold_no_record_is_listed_with_the_model(openai_server, tmp_path):
    openai_server.add_rule("Nothing to see", "<think>Hmm, no names here.</think>\nI found no entities.")
    openai_server.add_rule("Marta Quell", '("entity"<|>MARTA QUELL<|>PERSON<|>Chairs the cooperative.)\n<|COMPLETE|>')
    model = build_chat_model(settings(openai_server.base_url), None, UsageMeter())
    units = pl.DataFrame(
        {
            "id": ["u1", "u2", "u3"],
            "text": ["Nothing to see here.", "Marta Quell chairs it.", "  "],
            "document_key": ["a", "b", "c"],
        }
    )
    output = asyncio.run(
        extract_graph_records(model, units, ExtractionPlan(["person"], graph_prompts(), max_gleanings=0))
    )
    assert output.empty_units == ["u1"] and output.model == "gpt-4o-mini"  # the blank unit cost no call
    model.close()


# -- pure parts ----------------------------------------------------------------------------------


def test_think_blocks_are_stripped_whole_and_in_pieces():
    assert strip_think("<think>\nplan\n</think>\n\nThe answer") == ("The answer", True)
    assert strip_think("plan</think> The answer") == ("The answer", True)  # opening tag in the chat template
    assert strip_think("<think>never finished") == ("", True)
    assert strip_think("No block <think> here") == ("No block <think> here", False)
    pieces = ["<th", "ink>a b", " c</thi", "nk>", "\n\n", "Hel", "lo"]
    think = ThinkFilter()
    assert "".join(think.feed(p) for p in pieces) + think.finish() == "Hello" and think.stripped
    plain = ThinkFilter()
    assert "".join(plain.feed(p) for p in ["<", "b>x"]) + plain.finish() == "<b>x" and not plain.stripped


def test_almost_json_is_repaired_and_json_left_alone():
    assert repair_json_answer('Here it is:\n```json\n{"a": 1,}\n```') == '{"a": 1}'
    assert repair_json_answer('{"a": 1}') is None
    assert repair_json_answer("no json at all") is None


@pytest.mark.parametrize(
    "detail, expected",
    [
        (
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, "
            "1000 in the completion). Please reduce the length of the messages or completion.",
            (4096, 5000, 4000, 1000),
        ),
        (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. "
            "Please reduce the length of the messages.",
            (128000, 130000, None, None),
        ),
        (
            "request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it",
            (4096, 4390, None, None),
        ),
        ("the request exceeds the available context size, try increasing it", (None, None, None, None)),
    ],
)
def test_context_length_errors_are_read(detail, expected):
    overflow = parse_overflow(detail)
    assert (overflow.window, overflow.requested, overflow.prompt, overflow.completion) == expected


def test_shortening_keeps_the_instructions_and_the_closing_lines():
    messages = [{"role": "system", "content": long_prompt(100)}, {"role": "user", "content": "Who?"}]
    shorter = shrink_messages(messages, 700, "cl100k_base")
    assert shorter is not None and shorter[1] == messages[1]
    text = shorter[0]["content"]
    assert count_tokens(text) + count_tokens("Who?") <= 700 < count_tokens(messages[0]["content"])
    assert text.startswith("Answer the question from the table below.") and text.endswith("\n\nAnswer:")
    assert shrink_messages(messages, 20, "cl100k_base") is None  # that would cut the instructions


def test_an_answer_cached_with_its_think_block_comes_back_without_it(openai_server, tmp_path):
    """Answers cached before the client removed <think> blocks are cleaned when read."""
    db = tmp_path / "graphrag.duckdb"
    openai_server.add_rule("cached thinking", "<think>plan</think>\nThe answer", times=1)
    model = build_chat_model(settings(openai_server.base_url), db, UsageMeter())
    first = chat(model, "cached thinking")
    model.close()
    with duckdb.connect(str(db)) as conn:  # as an older version stored it
        conn.execute("update llm_cache set response = ?", [json.dumps({"text": "<think>plan</think>\nThe answer"})])
    again = build_chat_model(settings(openai_server.base_url), db, UsageMeter())
    second = chat(again, "cached thinking")
    assert first.text == second.text == "The answer" and second.cached
    again.close()
